package main

// The soak's other parties: a webhook receiver that verifies every
// signature and fails a share of deliveries on purpose, and the two kinds
// of subscribers to a broadcast's progress (graphql-ws and Server-Sent
// Events) that count what they get.

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

// webhookReceiver answers Herald's deliveries: 500 for a failShare of
// attempts (chosen by a hash of the event id and its attempt number:
// independent attempts), 204 otherwise, after checking
// the signature. An attempt with a bad signature is answered 400 and
// counted: it is never an injected error.
type webhookReceiver struct {
	srv       *http.Server
	addr      string
	failShare float64

	mu       sync.Mutex
	wh       *standardwebhooks.Webhook
	attempts map[string]int // webhook-id → attempts seen
	received map[string]int // "type:key" → successful deliveries (2xx answered)
	total    int64
	ok       int64
	injected int64
	bad      int64
	firstBad string
}

func startWebhookReceiver(failShare float64) (*webhookReceiver, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r := &webhookReceiver{addr: ln.Addr().String(), failShare: failShare,
		attempts: map[string]int{}, received: map[string]int{}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /hook", r.serve)
	r.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = r.srv.Serve(ln) }()
	return r, nil
}

func (r *webhookReceiver) Close() { _ = r.srv.Close() }

// register creates the endpoint in Herald (device registrations and
// broadcasts' ends) and keeps its secret.
func (r *webhookReceiver) register(ctx context.Context, baseURL, admin string) error {
	body, _ := json.Marshal(map[string]any{"url": "http://" + r.addr + "/hook", "description": "bench soak",
		"eventTypes": []string{"device.registered", "notification.broadcast.completed"}})
	var out struct {
		Success bool
		Data    struct{ Secret string }
		Error   json.RawMessage
	}
	if err := doJSON(ctx, http.MethodPost, baseURL+"/api/v1/webhooks", admin, body, &out); err != nil {
		return err
	}
	if !out.Success || out.Data.Secret == "" {
		return fmt.Errorf("POST /api/v1/webhooks: %s", out.Error)
	}
	wh, err := standardwebhooks.NewWebhook(out.Data.Secret)
	if err != nil {
		return err
	}
	r.mu.Lock()
	r.wh = wh
	r.mu.Unlock()
	return nil
}

func (r *webhookReceiver) serve(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(io.LimitReader(req.Body, 1<<20))
	r.mu.Lock()
	defer r.mu.Unlock()
	r.total++
	if err == nil && r.wh != nil {
		err = r.wh.Verify(body, req.Header)
	}
	var ev struct {
		Type string
		Data struct{ DeviceID, JobID string }
	}
	if err == nil {
		err = json.Unmarshal(body, &ev)
	}
	if err != nil {
		r.bad++
		if r.firstBad == "" {
			r.firstBad = err.Error()
		}
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	id := req.Header.Get("webhook-id")
	r.attempts[id]++
	if injectFailure(id, r.attempts[id], r.failShare) {
		r.injected++
		w.WriteHeader(http.StatusInternalServerError)
		return
	}
	r.ok++
	key := ev.Data.DeviceID
	if ev.Type == "notification.broadcast.completed" {
		key = ev.Data.JobID
	}
	r.received[ev.Type+":"+key]++
	w.WriteHeader(http.StatusNoContent)
}

// injectFailure says whether attempt n of event id is answered 500: a
// hash of both, so that attempts fail independently of each other with
// probability share, and the same run fails the same attempts.
func injectFailure(id string, n int, share float64) bool {
	h := sha256.Sum256(fmt.Appendf(nil, "%s#%d", id, n))
	return float64(binary.BigEndian.Uint64(h[:8])>>11)/(1<<53) < share
}

// counts: attempts, successful deliveries, injected failures, bad
// signatures.
func (r *webhookReceiver) counts() (total, ok, injected, bad int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.total, r.ok, r.injected, r.bad
}

// missing returns what each expected event not yet delivered (answered
// 2xx) stands for.
func (r *webhookReceiver) missing(expected map[string]string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for key, what := range expected {
		if r.received[key] == 0 {
			out = append(out, what)
		}
	}
	return out
}

// waitAll waits until every expected event was delivered or until by, and
// returns those still missing.
func (r *webhookReceiver) waitAll(ctx context.Context, expected map[string]string, by time.Time) []string {
	for {
		missing := r.missing(expected)
		if len(missing) == 0 || time.Now().After(by) || ctx.Err() != nil {
			return missing
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// duplicates is how many successful deliveries repeated an event already
// delivered (allowed: delivery is at least once).
func (r *webhookReceiver) duplicates() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, c := range r.received {
		n += c - 1
	}
	return n
}

// subscriberResult is what one subscriber saw of a broadcast.
type subscriberResult struct {
	Events int
	Final  struct {
		Status          string
		Sent            int64
		TotalRecipients int64
	}
	Completed bool   // the stream ended after the job's final state
	Err       string `json:",omitempty"`
}

const jobUpdatedDoc = `subscription Job($id: ID!) { notificationJobUpdated(id: $id) { status sent totalRecipients } }`

// subscribeWS follows a broadcast over graphql-ws (graphql-transport-ws):
// connection_init with the token, subscribe, count "next" messages until
// "complete".
func subscribeWS(ctx context.Context, baseURL, token, jobID string) (res subscriberResult) {
	d := websocket.Dialer{Subprotocols: []string{"graphql-transport-ws"}, HandshakeTimeout: 30 * time.Second}
	c, _, err := d.DialContext(ctx, "ws"+strings.TrimPrefix(baseURL, "http")+"/graphql", nil)
	if err != nil {
		res.Err = "dial: " + err.Error()
		return res
	}
	defer c.Close()
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()
	send := func(v any) error { return c.WriteJSON(v) }
	if err := send(map[string]any{"type": "connection_init", "payload": map[string]string{"token": token}}); err != nil {
		res.Err = err.Error()
		return res
	}
	if err := send(map[string]any{"type": "subscribe", "id": "1", "payload": map[string]any{
		"query": jobUpdatedDoc, "variables": map[string]string{"id": jobID}}}); err != nil {
		res.Err = err.Error()
		return res
	}
	for {
		var msg struct {
			Type    string
			ID      string
			Payload json.RawMessage
		}
		if err := c.ReadJSON(&msg); err != nil {
			if ctx.Err() != nil {
				err = fmt.Errorf("no final state before the limit (%w)", ctx.Err())
			}
			res.Err = err.Error()
			return res
		}
		switch msg.Type {
		case "connection_ack", "pong":
		case "ping":
			_ = send(map[string]string{"type": "pong"})
		case "next":
			var p struct {
				Data struct {
					NotificationJobUpdated json.RawMessage
				}
				Errors []struct{ Message string }
			}
			if err := json.Unmarshal(msg.Payload, &p); err != nil || len(p.Errors) > 0 {
				res.Err = fmt.Sprintf("next: %s", msg.Payload)
				return res
			}
			res.Events++
			_ = json.Unmarshal(p.Data.NotificationJobUpdated, &res.Final)
		case "complete":
			res.Completed = true
			_ = c.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(time.Second))
			return res
		default:
			res.Err = fmt.Sprintf("%s: %s", msg.Type, msg.Payload)
			return res
		}
	}
}

// subscribeSSE follows a broadcast's events stream and counts its
// "progress" events until the stream ends.
func subscribeSSE(ctx context.Context, client *http.Client, baseURL, token, jobID string) (res subscriberResult) {
	req, err := http.NewRequestWithContext(ctx, "GET", baseURL+"/api/v1/notifications/broadcasts/"+jobID+"/events", nil)
	if err != nil {
		res.Err = err.Error()
		return res
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Accept", "text/event-stream")
	// The stream outlives the API client's timeout; ctx bounds it.
	stream := &http.Client{Transport: client.Transport}
	resp, err := stream.Do(req)
	if err != nil {
		res.Err = err.Error()
		return res
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		res.Err = fmt.Sprintf("HTTP %d: %s", resp.StatusCode, b)
		return res
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	event := ""
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			event = ""
		case strings.HasPrefix(line, "event:"):
			event = strings.TrimSpace(strings.TrimPrefix(line, "event:"))
		case strings.HasPrefix(line, "data:"):
			data := strings.TrimSpace(strings.TrimPrefix(line, "data:"))
			if event != "progress" {
				res.Err = fmt.Sprintf("event %q: %s", event, data)
				return res
			}
			res.Events++
			_ = json.Unmarshal([]byte(data), &res.Final)
		}
	}
	if err := sc.Err(); err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("no final state before the limit (%w)", ctx.Err())
		}
		res.Err = err.Error()
		return res
	}
	res.Completed = true
	return res
}
