package notices_test

import (
	"github.com/herald-vpn/herald/internal/billing/notices"
	"github.com/herald-vpn/herald/internal/mail"
	"github.com/herald-vpn/herald/internal/messenger"
	"github.com/herald-vpn/herald/internal/notifications"
	"github.com/herald-vpn/herald/internal/sqlstore"
	"github.com/herald-vpn/herald/internal/subscriptions"
	"github.com/riverqueue/river"
)

// The real services are what the worker's interfaces name, and the
// worker is a River worker of the notice jobs.
var (
	_ notices.Accounts                       = (*sqlstore.DB)(nil)
	_ notices.Entitlements                   = (*sqlstore.DB)(nil)
	_ notices.Pusher                         = (*notifications.Service)(nil)
	_ notices.Renderer                       = (*mail.Templates)(nil)
	_ notices.Mailer                         = mail.Sender(nil)
	_ notices.Chats                          = (*messenger.Service)(nil)
	_ river.Worker[subscriptions.NoticeArgs] = (*notices.Worker)(nil)
)
