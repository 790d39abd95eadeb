package telegram_test

import (
	"testing"

	"github.com/herald-vpn/herald/internal/telegram"
)

func TestCheck(t *testing.T) {
	s, c := newFake(t)
	const hook = "https://api.example.com/webhooks/telegram"
	if err := c.SetWebhook(t.Context(), hook, "", nil); err != nil {
		t.Fatal(err)
	}
	r, err := c.Check(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if r.Bot.Username != "herald_test_bot" || r.Webhook.URL != hook {
		t.Errorf("Check = %+v, want the fake bot and webhook %s", r, hook)
	}
	if n := s.Calls("setWebhook"); n != 1 {
		t.Errorf("setWebhook called %d times, want once (by the test)", n)
	}

	_, err = telegram.New("123456:wrong", s.URL, nil).Check(t.Context())
	if telegram.Classify(err) != telegram.Unauthorized {
		t.Errorf("Check with a rejected token = %v, want Unauthorized", err)
	}
}
