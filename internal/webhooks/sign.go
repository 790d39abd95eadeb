package webhooks

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"strconv"
	"strings"
	"time"
)

// SecretPrefix begins every endpoint secret, as Standard Webhooks writes
// them.
const SecretPrefix = "whsec_"

// NewSecret returns a fresh signing secret: whsec_ and 32 random bytes in
// base64.
func NewSecret() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return SecretPrefix + base64.StdEncoding.EncodeToString(b), nil
}

var errBadSecret = errors.New("webhooks: malformed secret")

// Sign is one signature of the spec: v1, and the base64 HMAC-SHA256, keyed
// by the secret's bytes, of "id.timestamp.body".
func Sign(secret, id string, ts time.Time, body []byte) (string, error) {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, SecretPrefix))
	if err != nil || len(key) == 0 {
		return "", errBadSecret
	}
	m := hmac.New(sha256.New, key)
	m.Write([]byte(id))
	m.Write([]byte{'.'})
	m.Write([]byte(strconv.FormatInt(ts.Unix(), 10)))
	m.Write([]byte{'.'})
	m.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(m.Sum(nil)), nil
}

// Headers are the three headers of a delivery.
type Headers struct {
	ID, Timestamp, Signature string
}

// SignedHeaders signs body with every secret (the current one, and the
// previous one while a rotation overlaps), space-separated as the spec's
// multiple signatures are.
func SignedHeaders(secrets []string, id string, ts time.Time, body []byte) (Headers, error) {
	sigs := make([]string, 0, len(secrets))
	for _, s := range secrets {
		sig, err := Sign(s, id, ts, body)
		if err != nil {
			return Headers{}, err
		}
		sigs = append(sigs, sig)
	}
	return Headers{ID: id, Timestamp: strconv.FormatInt(ts.Unix(), 10), Signature: strings.Join(sigs, " ")}, nil
}
