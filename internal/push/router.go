package push

import (
	"context"
	"log/slog"
	"reflect"
	"strings"
)

// NewRouter returns a Provider that dispatches by Target.Platform:
//
//   - ios: apns when configured, otherwise fcm (FCM can reach iOS apps that
//     registered through the Firebase SDK).
//   - android: fcm.
//   - web: web (Web Push).
//   - huawei: hms (Huawei Push Kit), never fcm: a phone without Google's
//     services cannot get FCM's pushes, and its token is Push Kit's.
//   - when none of fcm, apns, web and hms is configured, every target goes
//     to dev.
//
// A nil Provider (including a typed nil such as (*fcm.Client)(nil)) means
// "not configured". A platform with no provider while some real provider is
// configured yields a Fatal error (reason NoProvider) rather than silently
// dev-logging production traffic. Unknown platforms yield Other
// (reason UnknownPlatform).
func NewRouter(fcm, apns, web, hms Provider, dev Provider) Provider {
	r := &router{fcm: configured(fcm), apns: configured(apns), web: configured(web), hms: configured(hms), dev: configured(dev)}
	return r
}

type router struct {
	fcm, apns, web, hms, dev Provider
}

func (r *router) Send(ctx context.Context, t Target, n Notification) error {
	p, err := r.pick(t.Platform)
	if err != nil {
		return err
	}
	return p.Send(ctx, t, n)
}

func (r *router) pick(platform string) (Provider, error) {
	var p Provider
	switch {
	case r.fcm == nil && r.apns == nil && r.web == nil && r.hms == nil:
		p = r.dev
	case strings.EqualFold(platform, PlatformIOS):
		p = r.apns
		if p == nil {
			p = r.fcm
		}
	case strings.EqualFold(platform, PlatformAndroid):
		p = r.fcm
	case strings.EqualFold(platform, PlatformWeb):
		p = r.web
	case strings.EqualFold(platform, PlatformHuawei):
		p = r.hms
	default:
		return nil, &Error{Kind: Other, Provider: "router", Reason: "UnknownPlatform: " + platform}
	}
	if p == nil {
		return nil, &Error{Kind: Fatal, Provider: "router", Reason: "NoProvider: " + platform}
	}
	return p, nil
}

// configured turns typed nils into untyped nil so that callers can pass an
// unset *fcm.Client without tripping the classic nil-interface trap.
func configured(p Provider) Provider {
	if IsNil(p) {
		return nil
	}
	return p
}

// IsNil reports whether p is nil or a typed nil (an unset *fcm.Client):
// "not configured".
func IsNil(p Provider) bool {
	if p == nil {
		return true
	}
	v := reflect.ValueOf(p)
	switch v.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Func, reflect.Chan, reflect.Slice, reflect.Interface:
		return v.IsNil()
	}
	return false
}

// NewDev returns a Provider for development that delivers nothing: it logs
// each push at INFO (platform, token prefix only, title, body, data) and
// reports it sent. A nil logger means slog.Default().
func NewDev(logger *slog.Logger) Provider {
	if logger == nil {
		logger = slog.Default()
	}
	return devProvider{log: logger}
}

type devProvider struct{ log *slog.Logger }

func (d devProvider) Send(ctx context.Context, t Target, n Notification) error {
	d.log.LogAttrs(ctx, slog.LevelInfo, "push (dev provider, not delivered)",
		slog.String("platform", t.Platform),
		slog.String("token_prefix", tokenPrefix(t.Token)),
		slog.String("title", n.Title),
		slog.String("body", n.Body),
		slog.Any("data", n.Data),
	)
	return nil
}

// tokenPrefix shortens a device token for logs: device tokens are
// credentials for pushing to a user, so never log them whole.
func tokenPrefix(token string) string {
	const keep = 8
	if len(token) <= keep {
		return token
	}
	return token[:keep] + "…"
}
