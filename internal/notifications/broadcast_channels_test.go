package notifications_test

import (
	"context"
	"slices"
	"testing"

	"github.com/herald-vpn/herald/internal/apperr"
	"github.com/herald-vpn/herald/internal/notifications"
	"github.com/herald-vpn/herald/internal/sqlstore/sqlstoretest"
)

// A broadcast's channels are the user send's spellings, push and email:
// none is push alone, the job keeps them in one order, and anything else
// (telegram too) is INVALID_INPUT naming channels.
func TestBroadcastChannels(t *testing.T) {
	e := newEnv(t, sqlstoretest.NewURL(t, "sqlite"))
	ctx := context.Background()
	for _, c := range []struct {
		in, want []string
	}{
		{nil, []string{"push"}},
		{[]string{}, []string{"push"}},
		{[]string{"push"}, []string{"push"}},
		{[]string{"email"}, []string{"email"}},
		{[]string{"email", "push", "email"}, []string{"push", "email"}},
	} {
		j, err := e.svc.BroadcastWith(ctx, hello, notifications.BroadcastOptions{Channels: c.in})
		if err != nil || !slices.Equal(j.Channels, c.want) {
			t.Errorf("channels %q: job channels %q, %v; want %q", c.in, j.Channels, err, c.want)
		}
		if j.Pushes() != slices.Contains(c.want, "push") || j.Emails() != slices.Contains(c.want, "email") {
			t.Errorf("channels %q: pushes %v, emails %v", c.in, j.Pushes(), j.Emails())
		}
	}
	for _, bad := range [][]string{{"telegram"}, {"push", "sms"}, {""}, {"Email"}} {
		_, err := e.svc.BroadcastWith(ctx, hello, notifications.BroadcastOptions{Channels: bad})
		if ae := wantCode(t, err, apperr.InvalidInput); ae.Details["field"] != "channels" {
			t.Errorf("channels %q: field %v, want channels", bad, ae.Details["field"])
		}
	}
}
