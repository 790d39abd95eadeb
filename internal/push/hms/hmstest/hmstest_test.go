package hmstest_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/push/hms/hmstest"
)

// accessToken gets a token from the fake's endpoint as a client would.
func accessToken(t *testing.T, srv *hmstest.Server) string {
	t.Helper()
	resp, err := srv.Client().PostForm(srv.TokenURL(), url.Values{
		"grant_type": {"client_credentials"}, "client_id": {srv.AppID}, "client_secret": {srv.ClientSecret},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var tok struct {
		AccessToken string `json:"access_token"`
		ExpiresIn   int    `json:"expires_in"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&tok); err != nil || resp.StatusCode != 200 || tok.AccessToken == "" || tok.ExpiresIn <= 0 {
		t.Fatalf("token: status %d, %+v, %v", resp.StatusCode, tok, err)
	}
	return tok.AccessToken
}

type result struct {
	status int
	code   string
	msg    string
}

func send(t *testing.T, srv *hmstest.Server, bearer, appID, body string) result {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1/"+appID+"/messages:send", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var a struct{ Code, Msg string }
	if err := json.Unmarshal(raw, &a); err != nil {
		t.Fatalf("answer %q: %v", raw, err)
	}
	return result{resp.StatusCode, a.Code, a.Msg}
}

const good = `{"validate_only":false,"message":{"token":["dev"],"android":{"urgency":"HIGH","ttl":"60s","notification":{"title":"t","body":"b","click_action":{"type":3}}}}}`

// The fake refuses what Push Kit refuses, with its result code, and
// records only what it accepts.
func TestFakeValidatesMessages(t *testing.T) {
	big := `{"validate_only":false,"message":{"token":["dev"],"data":"` + strings.Repeat("x", 4100) + `"}}`
	cases := []struct {
		name string
		body string
		code string
	}{
		{"good", good, "80000000"},
		{"data message", `{"validate_only":false,"message":{"token":["dev"],"data":"{\"k\":1}"}}`, "80000000"},
		{"unknown field", strings.Replace(good, `"urgency"`, `"priority":"HIGH","urgency"`, 1), "80100003"},
		{"misspelt field", strings.Replace(good, `"click_action"`, `"clickAction"`, 1), "80100003"},
		{"misspelt message", strings.Replace(good, `"message"`, `"messager"`, 1), "80100003"},
		{"data not a string", `{"validate_only":false,"message":{"token":["dev"],"data":{"k":1}}}`, "80100003"},
		{"collapse_key a string", `{"validate_only":false,"message":{"token":["dev"],"android":{"collapse_key":"job"}}}`, "80100003"},
		{"collapse_key out of range", `{"validate_only":false,"message":{"token":["dev"],"android":{"collapse_key":101}}}`, "80100001"},
		{"no validate_only", `{"message":{"token":["dev"],"data":"x"}}`, "80100003"},
		{"no click_action", strings.Replace(good, `,"click_action":{"type":3}`, ``, 1), "80100001"},
		{"click_action type 1 without intent", strings.Replace(good, `"type":3`, `"type":1`, 1), "80100001"},
		{"click_action type 9", strings.Replace(good, `"type":3`, `"type":9`, 1), "80100001"},
		{"bad urgency", strings.Replace(good, `"HIGH"`, `"high"`, 1), "80100001"},
		{"bad ttl", strings.Replace(good, `"60s"`, `"60"`, 1), "80100001"},
		{"bad importance", strings.Replace(good, `"title":"t"`, `"importance":"URGENT","title":"t"`, 1), "80100001"},
		{"token not a list", strings.Replace(good, `["dev"]`, `"dev"`, 1), "80100003"},
		{"no token", strings.Replace(good, `"token":["dev"],`, ``, 1), "80300010"},
		{"empty token list", strings.Replace(good, `["dev"]`, `[]`, 1), "80300010"},
		{"empty token", strings.Replace(good, `["dev"]`, `[""]`, 1), "80300007"},
		{"too large", big, "80300008"},
	}
	srv := hmstest.NewServer(t)
	tok := accessToken(t, srv)
	accepted := 0
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := send(t, srv, tok, srv.AppID, c.body)
			if got.code != c.code {
				t.Fatalf("got %+v, want code %s", got, c.code)
			}
			if c.code == "80000000" {
				accepted++
				if got.status != 200 {
					t.Fatalf("status %d", got.status)
				}
			} else if got.status < 400 {
				t.Fatalf("refusal with status %d", got.status)
			}
		})
	}
	if n := srv.TotalDelivered(); n != accepted {
		t.Fatalf("recorded %d messages, accepted %d", n, accepted)
	}
}

func TestFakeChecksAccessTokens(t *testing.T) {
	srv := hmstest.NewServer(t, hmstest.TokenLifetime(time.Second))
	tok := accessToken(t, srv)
	cases := []struct {
		name, bearer, appID, code string
	}{
		{"none", "", srv.AppID, "80200001"},
		{"unknown", "forged", srv.AppID, "80200001"},
		{"another app", tok, "99999999", "80200001"},
		{"good", tok, srv.AppID, "80000000"},
	}
	for _, c := range cases {
		if got := send(t, srv, c.bearer, c.appID, good); got.code != c.code {
			t.Fatalf("%s: got %+v, want %s", c.name, got, c.code)
		}
	}
	srv.ExpireAccessTokens()
	if got := send(t, srv, tok, srv.AppID, good); got.code != "80200003" || got.status != 401 {
		t.Fatalf("expired: got %+v", got)
	}
	if n := srv.RefusedAccessTokens(); n != 4 {
		t.Fatalf("RefusedAccessTokens = %d, want 4", n)
	}
	// A token lapses on its own after its lifetime.
	tok2 := accessToken(t, srv)
	time.Sleep(1100 * time.Millisecond)
	if got := send(t, srv, tok2, srv.AppID, good); got.code != "80200003" {
		t.Fatalf("lapsed: got %+v", got)
	}
}

func TestFakeChecksClientCredentials(t *testing.T) {
	srv := hmstest.NewServer(t)
	cases := []struct {
		name string
		form url.Values
		want int
	}{
		{"wrong secret", url.Values{"grant_type": {"client_credentials"}, "client_id": {srv.AppID}, "client_secret": {"nope"}}, 401},
		{"wrong client", url.Values{"grant_type": {"client_credentials"}, "client_id": {"1"}, "client_secret": {srv.ClientSecret}}, 401},
		{"wrong grant", url.Values{"grant_type": {"password"}, "client_id": {srv.AppID}, "client_secret": {srv.ClientSecret}}, 400},
		{"right", url.Values{"grant_type": {"client_credentials"}, "client_id": {srv.AppID}, "client_secret": {srv.ClientSecret}}, 200},
	}
	for _, c := range cases {
		resp, err := srv.Client().PostForm(srv.TokenURL(), c.form)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.want {
			t.Fatalf("%s: status %d, want %d", c.name, resp.StatusCode, c.want)
		}
	}
	if n := srv.TokenRequests(); n != len(cases) {
		t.Fatalf("TokenRequests = %d, want %d", n, len(cases))
	}
}

func TestFakeScriptedIllegalToken(t *testing.T) {
	srv := hmstest.NewServer(t)
	tok := accessToken(t, srv)
	srv.Fail("dev", 1, hmstest.IllegalToken())
	got := send(t, srv, tok, srv.AppID, good)
	var p struct {
		IllegalTokens []string `json:"illegal_tokens"`
	}
	if got.code != "80100000" || json.Unmarshal([]byte(got.msg), &p) != nil || len(p.IllegalTokens) != 1 || p.IllegalTokens[0] != "dev" {
		t.Fatalf("got %+v", got)
	}
	if got := send(t, srv, tok, srv.AppID, good); got.code != "80000000" {
		t.Fatalf("after the script: %+v", got)
	}
}
