package testsupport

import (
	"encoding/json"
	"strings"
)

// Tail returns the last n lines of s (a final newline ends the last line
// rather than starting an empty one), for the end of a log in a failure
// message.
func Tail(s string, n int) string {
	all := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(all) > n {
		all = all[len(all)-n:]
	}
	return strings.Join(all, "\n")
}

// JSONPath walks nested objects of a decoded JSON value:
// JSONPath(body, "data", "login", "accessToken"). It returns nil where a
// key is missing or a value on the way is not an object.
func JSONPath(v any, keys ...string) any {
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

// ListenAddr returns the address a Herald started with HERALD_ADDR
// 127.0.0.1:0 bound, from its JSON log's "herald listening" line; "" until
// that line is written. Binding port 0 is the only race-free way to give a
// test server a free port: a port found free and closed again can be taken
// by another test process before the server binds it.
func ListenAddr(log string) string { return addrOf(log, "herald listening") }

// StartingMessage is the line a server logs when its listener is open but
// its database is not yet (it answers 503 until then).
const StartingMessage = "starting: the API answers 503 until the database is open and migrated"

// StartingAddr is ListenAddr of a server that may still be waiting for its
// database: the address of its StartingMessage line, or of its "herald
// listening" line.
func StartingAddr(log string) string {
	if addr := addrOf(log, StartingMessage); addr != "" {
		return addr
	}
	return ListenAddr(log)
}

// addrOf returns the addr attribute of the first JSON log line whose msg
// is msg.
func addrOf(log, msg string) string {
	quoted, _ := json.Marshal(msg)
	for _, line := range strings.Split(log, "\n") {
		if !strings.Contains(line, string(quoted)) {
			continue
		}
		var rec struct {
			Msg  string `json:"msg"`
			Addr string `json:"addr"`
		}
		if json.Unmarshal([]byte(line), &rec) == nil && rec.Msg == msg {
			return rec.Addr
		}
	}
	return ""
}
