package fcm

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/push"
)

// referenceBody is the request body encoded whole, token included.
func referenceBody(t testing.TB, token string, n push.Notification, now time.Time) []byte {
	t.Helper()
	data, err := EncodeData(n.Data)
	if err != nil {
		t.Fatal(err)
	}
	msg := sendRequest{Message: message{Token: token, Data: data}}
	if n.Title != "" || n.Body != "" {
		msg.Message.Notification = &notification{Title: n.Title, Body: n.Body}
	}
	applyOptions(&msg.Message, n, now)
	b, err := json.Marshal(msg)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The token spliced into the encoded message gives the bytes encoding the
// whole request would, prepared or not, for any token and notification.
func TestMessageBody(t *testing.T) {
	badge, zero := 3, time.Duration(0)
	cases := []struct {
		name  string
		token string
		n     push.Notification
	}{
		{"plain", "fcm-token:APA91b_x-1", push.Notification{Title: "Hi", Body: "There"}},
		{"data only", "tok", push.Notification{Data: map[string]any{"k": 1, "s": "v", "o": map[string]any{"a": true}}}},
		{"options", "tok", push.Notification{Title: "t", CollapseKey: "job-1", Options: push.Options{Priority: push.PriorityHigh, Badge: &badge, Sound: "default", ImageURL: "https://x/y.png", ChannelID: "c", ThreadID: "th"}}},
		{"silent", "tok", push.Notification{Title: "t", Options: push.Options{ContentAvailable: true, TTL: &zero}}},
		{"token needing escapes", "a\"b\\c<d>&é\u2028\x01", push.Notification{Body: "b"}},
		{"empty title and body", "tok", push.Notification{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, n := range []push.Notification{c.n, c.n.Prepared()} {
				for range 2 { // a prepared notification's second send reuses its encoding
					got, err := messageBody(c.token, n)
					if err != nil {
						t.Fatal(err)
					}
					if want := referenceBody(t, c.token, n, time.Now()); !bytes.Equal(got, want) {
						t.Fatalf("body\n%s\nwant\n%s", got, want)
					}
				}
			}
		})
	}
}

// A TTL makes the APNs expiration depend on the time of the send: a
// prepared notification with one is encoded at every send.
func TestMessageBodyWithTTL(t *testing.T) {
	ttl := time.Hour
	n := push.Notification{Title: "t", Options: push.Options{TTL: &ttl}}.Prepared()
	first, err := messageBody("tok", n)
	if err != nil {
		t.Fatal(err)
	}
	n.Encoded(providerName, func() ([]byte, error) { return []byte(`{"message":{"token":"","stale":true}}`), nil })
	again, err := messageBody("tok", n)
	if err != nil || bytes.Contains(again, []byte("stale")) || !bytes.Contains(first, []byte(`"apns-expiration"`)) {
		t.Fatalf("with a TTL: %s then %s (%v)", first, again, err)
	}
}

func FuzzMessageBody(f *testing.F) {
	f.Add("tok", "title", "body", "value")
	f.Add("a\"\\<>&", "", "", "")
	f.Fuzz(func(t *testing.T, token, title, body, value string) {
		n := push.Notification{Title: title, Body: body, Data: map[string]any{"k": value}, CollapseKey: "c"}.Prepared()
		got, err := messageBody(token, n)
		if err != nil {
			t.Fatal(err)
		}
		if want := referenceBody(t, token, n, time.Now()); !bytes.Equal(got, want) {
			t.Fatalf("body %s, want %s", got, want)
		}
		var decoded sendRequest
		if err := json.Unmarshal(got, &decoded); err != nil {
			t.Fatalf("not JSON: %v", err)
		}
	})
}
