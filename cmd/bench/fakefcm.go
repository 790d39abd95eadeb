package main

// A lean fake of FCM HTTP v1 and of Google's OAuth2 token endpoint, run as
// a process of its own (`bench fake-fcm`). It accepts every send that has a
// bearer token and a message token, and only counts: recording a million
// messages would cost the memory being measured elsewhere. Plain HTTP/1.1
// on loopback; the senders (Herald and the bare sender) keep 64 connections.

import (
	"bytes"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

const fakeAccessToken = "ya29.herald-bench-fake"

func fakeFCMMain(args []string) error {
	fs := flag.NewFlagSet("fake-fcm", flag.ExitOnError)
	addr := fs.String("addr", "127.0.0.1:0", "listen address")
	_ = fs.Parse(args)

	var sent, refused atomic.Int64
	bufs := sync.Pool{New: func() any { return new(bytes.Buffer) }}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /token", func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"access_token":%q,"token_type":"Bearer","expires_in":3600}`, fakeAccessToken)
	})
	mux.HandleFunc("POST /v1/projects/{project}/messages:send", func(w http.ResponseWriter, r *http.Request) {
		b := bufs.Get().(*bytes.Buffer)
		b.Reset()
		_, err := b.ReadFrom(r.Body)
		ok := err == nil && r.Header.Get("Authorization") == "Bearer "+fakeAccessToken &&
			bytes.Contains(b.Bytes(), []byte(`"token":"`))
		bufs.Put(b)
		w.Header().Set("Content-Type", "application/json; charset=UTF-8")
		if !ok {
			refused.Add(1)
			w.WriteHeader(http.StatusBadRequest)
			_, _ = io.WriteString(w, `{"error":{"code":400,"message":"bad request","status":"INVALID_ARGUMENT","details":[]}}`)
			return
		}
		n := sent.Add(1)
		_, _ = io.WriteString(w, `{"name":"projects/`+r.PathValue("project")+`/messages/`+strconv.FormatInt(n, 10)+`"}`)
	})
	mux.HandleFunc("GET /count", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `{"sent":%d,"refused":%d}`, sent.Load(), refused.Load())
	})
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {})
	srv := &http.Server{Addr: *addr, Handler: mux, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 5 * time.Minute}
	fmt.Fprintf(os.Stderr, "fake FCM on %s\n", *addr)
	return srv.ListenAndServe()
}

// fakeCounts asks the fake how many sends it accepted and refused.
func fakeCounts(baseURL string) (sent, refused int64, err error) {
	c := &http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get(baseURL + "/count")
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	var v struct{ Sent, Refused int64 }
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
		return 0, 0, err
	}
	return v.Sent, v.Refused, nil
}

// fcmCredentials is a service-account key whose token_uri is the fake.
func fcmCredentials(baseURL, project string) ([]byte, error) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	return json.Marshal(map[string]string{
		"type":           "service_account",
		"project_id":     project,
		"private_key_id": "herald-bench",
		"private_key":    string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})),
		"client_email":   "herald-bench@" + project + ".iam.gserviceaccount.com",
		"client_id":      "100000000000000000001",
		"token_uri":      baseURL + "/token",
	})
}
