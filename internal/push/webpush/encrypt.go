package webpush

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/ecdh"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
)

// Sizes of the aes128gcm content coding (RFC 8188) as Web Push uses it
// (RFC 8291): one record of at most 4096 bytes, so at most 3993 bytes of
// plaintext after the 86-byte header, the padding delimiter and the
// 16-byte tag.
const (
	recordSize    = 4096
	saltLen       = 16
	headerLen     = saltLen + 4 + 1 + p256dhLen
	tagLen        = 16
	MaxPayloadLen = recordSize - headerLen - 1 - tagLen
)

// Encrypt seals plaintext for sub with RFC 8291: a fresh ephemeral P-256
// key pair and a fresh random salt for this message, one aes128gcm record
// (RFC 8188) whose header carries the salt, the record size 4096 and the
// ephemeral public key. The answer is the request body.
func Encrypt(sub Subscription, plaintext []byte) ([]byte, error) {
	as, err := ecdh.P256().GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	salt := make([]byte, saltLen)
	if _, err := rand.Read(salt); err != nil {
		return nil, err
	}
	return encrypt(sub, plaintext, as, salt)
}

// encrypt is Encrypt with the application server's key pair and the salt
// given (RFC 8291 Appendix A fixes both).
func encrypt(sub Subscription, plaintext []byte, as *ecdh.PrivateKey, salt []byte) ([]byte, error) {
	if len(plaintext) > MaxPayloadLen {
		return nil, fmt.Errorf("payload of %d bytes, at most %d fit one record", len(plaintext), MaxPayloadLen)
	}
	if len(salt) != saltLen {
		return nil, errors.New("salt must be 16 bytes")
	}
	ua := sub.pub
	if ua == nil {
		var err error
		if ua, err = ecdh.P256().NewPublicKey(sub.P256dh); err != nil {
			return nil, fmt.Errorf("p256dh: %w", err)
		}
	}
	asPublic := as.PublicKey().Bytes()
	secret, err := as.ECDH(ua)
	if err != nil {
		return nil, err
	}
	cek, nonce, err := deriveKeys(secret, ua.Bytes(), asPublic, sub.Auth, salt)
	if err != nil {
		return nil, err
	}
	block, err := aes.NewCipher(cek)
	if err != nil {
		return nil, err
	}
	gcm, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	body := make([]byte, headerLen, headerLen+len(plaintext)+1+tagLen)
	copy(body, salt)
	binary.BigEndian.PutUint32(body[saltLen:], recordSize)
	body[saltLen+4] = byte(len(asPublic))
	copy(body[saltLen+5:], asPublic)
	record := make([]byte, 0, len(plaintext)+1)
	record = append(append(record, plaintext...), 2) // 2: the last record's delimiter, no padding
	return gcm.Seal(body, nonce, record, nil), nil
}

// deriveKeys is RFC 8291 §3.3–3.4 then RFC 8188 §2.2–2.3: the content
// encryption key and the nonce of the first (only) record, from the ECDH
// secret of the two keys, the browser's (ua) and the application
// server's (as) public keys, the authentication secret and the salt.
func deriveKeys(secret, uaPublic, asPublic, auth, salt []byte) (cek, nonce []byte, err error) {
	keyInfo := make([]byte, 0, 14+2*p256dhLen)
	keyInfo = append(keyInfo, "WebPush: info\x00"...)
	keyInfo = append(keyInfo, uaPublic...)
	keyInfo = append(keyInfo, asPublic...)
	ikm, err := hkdf.Key(sha256.New, secret, auth, string(keyInfo), 32)
	if err != nil {
		return nil, nil, err
	}
	prk, err := hkdf.Extract(sha256.New, ikm, salt)
	if err != nil {
		return nil, nil, err
	}
	if cek, err = hkdf.Expand(sha256.New, prk, "Content-Encoding: aes128gcm\x00", 16); err != nil {
		return nil, nil, err
	}
	if nonce, err = hkdf.Expand(sha256.New, prk, "Content-Encoding: nonce\x00", 12); err != nil {
		return nil, nil, err
	}
	return cek, nonce, nil
}

// Decrypt opens a body Encrypt sealed, with the browser's private key and
// authentication secret: what a browser does, and what the webpushtest
// fake does to prove only the subscription can read a push. It reads the
// one-record messages Encrypt writes (and any single record with padding).
func Decrypt(body []byte, uaPrivate *ecdh.PrivateKey, auth []byte) ([]byte, error) {
	if len(body) < headerLen {
		return nil, errors.New("body shorter than the aes128gcm header")
	}
	salt := body[:saltLen]
	rs := binary.BigEndian.Uint32(body[saltLen:])
	idLen := int(body[saltLen+4])
	if idLen != p256dhLen || len(body) < saltLen+5+idLen {
		return nil, errors.New("key id is not a P-256 public key")
	}
	asPublic := body[saltLen+5 : saltLen+5+idLen]
	ciphertext := body[saltLen+5+idLen:]
	if rs < 18 || len(ciphertext) > int(rs) {
		return nil, fmt.Errorf("a record of %d bytes in a record size of %d: more than one record", len(ciphertext), rs)
	}
	as, err := ecdh.P256().NewPublicKey(asPublic)
	if err != nil {
		return nil, fmt.Errorf("key id: %w", err)
	}
	secret, err := uaPrivate.ECDH(as)
	if err != nil {
		return nil, err
	}
	cek, nonce, err := deriveKeys(secret, uaPrivate.PublicKey().Bytes(), asPublic, auth, salt)
	if err != nil {
		return nil, err
	}
	block, err := aes.NewCipher(cek)
	if err != nil {
		return nil, err
	}
	gcm, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	record, err := gcm.Open(nil, nonce, ciphertext, nil)
	if err != nil {
		return nil, errors.New("the record does not decrypt with this key")
	}
	// Strip the padding: zeros, then the delimiter (2 for the last record).
	i := len(record) - 1
	for i >= 0 && record[i] == 0 {
		i--
	}
	if i < 0 || record[i] != 2 {
		return nil, errors.New("the record has no last-record delimiter")
	}
	return record[:i], nil
}
