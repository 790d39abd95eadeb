package securityalert_test

import (
	"github.com/herald-vpn/herald/internal/mail"
	"github.com/herald-vpn/herald/internal/messenger"
	"github.com/herald-vpn/herald/internal/notifications"
	"github.com/herald-vpn/herald/internal/securityalert"
	"github.com/herald-vpn/herald/internal/securitylog"
	"github.com/herald-vpn/herald/internal/sqlstore"
	"github.com/riverqueue/river"
)

// The real services are what the worker's interfaces name, and the
// worker is a River worker of the alert jobs.
var (
	_ securityalert.Accounts                       = (*sqlstore.DB)(nil)
	_ securityalert.Pusher                         = (*notifications.Service)(nil)
	_ securityalert.Renderer                       = (*mail.Templates)(nil)
	_ securityalert.Mailer                         = mail.Sender(nil)
	_ securityalert.Chats                          = (*messenger.Service)(nil)
	_ river.Worker[securitylog.NewDeviceAlertArgs] = (*securityalert.Worker)(nil)
)
