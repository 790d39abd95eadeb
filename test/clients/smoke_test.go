package clients

import "testing"

// TestHarness runs the smallest client: node reaches the server and reads
// the envelope, and the harness's account helpers work.
func TestHarness(t *testing.T) {
	needNode(t)
	s := startServer(t, nil)
	if tok := s.userToken(t, "smoke@example.com"); tok == "" {
		t.Fatal("no token")
	}
	runNode(t, s, "smoke.mjs", nil)
}
