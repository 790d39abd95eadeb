package sqlstore

import (
	"bytes"
	"strings"
	"testing"
)

// FuzzNotifyPayload holds the two NOTIFY payloads another replica's
// notification is read from, the live events' and the revocations': a
// payload that decodes is exactly what encoding its parts writes, and
// parts that obey the format's rules (no newline in an origin or topic, no
// colon in a kind) come back unchanged from their payload.
func FuzzNotifyPayload(f *testing.F) {
	f.Add("0b8c1f3e\nnotifications:job-1\n{\"id\":\"job-1\",\"status\":\"processing\",\"sent\":12}", "0b8c1f3e", "messenger", []byte("{\"kind\":\"subscribe\",\n\"chatId\":\"42\"}"))
	f.Add("session:5f0c3a7e-2f5b-4a8e-9d1e-6d3f1b2c4a5e", "origin", "topic", []byte(""))
	f.Add("account:acct:with:colons", "", "", []byte("\n\n"))
	f.Add("", "o\nrigin", "to\npic", []byte("\x00\xff"))
	f.Add("\n\n", "\xff", "t:o", []byte("data\r\n"))
	f.Fuzz(func(t *testing.T, payload, origin, topic string, data []byte) {
		if o, tp, d, ok := decodeLivePayload(payload); ok {
			if strings.Contains(o, "\n") || strings.Contains(tp, "\n") {
				t.Fatalf("live payload %q decoded to origin %q, topic %q: a newline in either", payload, o, tp)
			}
			if again := encodeLivePayload(o, tp, d); again != payload {
				t.Fatalf("live payload %q decoded to (%q, %q, %q), which encodes to %q", payload, o, tp, d, again)
			}
		} else if strings.Count(payload, "\n") >= 2 {
			t.Fatalf("live payload %q with both separators was refused", payload)
		}
		if !strings.Contains(origin, "\n") && !strings.Contains(topic, "\n") {
			o, tp, d, ok := decodeLivePayload(encodeLivePayload(origin, topic, data))
			if !ok || o != origin || tp != topic || !bytes.Equal(d, data) {
				t.Fatalf("live event (%q, %q, %q) came back as (%q, %q, %q, %v)", origin, topic, data, o, tp, d, ok)
			}
		}

		if kind, id, ok := decodeRevocation(payload); ok {
			if strings.Contains(kind, ":") {
				t.Fatalf("revocation %q decoded to kind %q, with a colon", payload, kind)
			}
			if again := encodeRevocation(kind, id); again != payload {
				t.Fatalf("revocation %q decoded to (%q, %q), which encodes to %q", payload, kind, id, again)
			}
		} else if strings.Contains(payload, ":") {
			t.Fatalf("revocation %q with a colon was refused", payload)
		}
		if kind, id := origin, topic; !strings.Contains(kind, ":") {
			k, i, ok := decodeRevocation(encodeRevocation(kind, id))
			if !ok || k != kind || i != id {
				t.Fatalf("revocation (%q, %q) came back as (%q, %q, %v)", kind, id, k, i, ok)
			}
		}
	})
}
