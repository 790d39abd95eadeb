package hms

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/push"
)

// referenceBody is the request body encoded whole, token included.
func referenceBody(t testing.TB, token string, n push.Notification) []byte {
	t.Helper()
	b, err := encodeMessage(n)
	if err != nil {
		t.Fatal(err)
	}
	var req sendRequest
	if err := json.Unmarshal(b, &req); err != nil {
		t.Fatal(err)
	}
	req.Message.Token = []string{token}
	out, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// The token spliced into the encoded message gives the bytes encoding the
// whole request would, prepared or not, for any token and notification.
func TestMessageBody(t *testing.T) {
	ttl := time.Hour
	cases := []struct {
		name  string
		token string
		n     push.Notification
	}{
		{"plain", "IQAAAACy0kYdAAB_x-1", push.Notification{Title: "Hi", Body: "There"}},
		{"data only", "tok", push.Notification{Data: map[string]any{"k": 1, "s": "v"}}},
		{"options", "tok", push.Notification{Title: "t", CollapseKey: "job-1", Options: push.Options{Priority: push.PriorityHigh, TTL: &ttl, Sound: "ding", ImageURL: "https://x/y.png", ChannelID: "c"}}},
		{"silent", "tok", push.Notification{Title: "t", Options: push.Options{ContentAvailable: true}}},
		{"token needing escapes", "a\"b\\c<d>&é\u2028\x01", push.Notification{Body: "b"}},
		{"empty", "tok", push.Notification{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, n := range []push.Notification{c.n, c.n.Prepared()} {
				for range 2 { // a prepared notification's second send reuses its encoding
					got, err := messageBody(c.token, n)
					if err != nil {
						t.Fatal(err)
					}
					if want := referenceBody(t, c.token, n); !bytes.Equal(got, want) {
						t.Fatalf("body\n%s\nwant\n%s", got, want)
					}
				}
			}
		})
	}
}

func TestMessageBodyInvalidData(t *testing.T) {
	_, err := messageBody("tok", push.Notification{Data: map[string]any{"ch": make(chan int)}})
	if err == nil {
		t.Fatal("a channel in Data encoded")
	}
}
