package telegramtest_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/telegram"
	"github.com/herald-vpn/herald/internal/telegram/telegramtest"
)

func TestValidateHTML(t *testing.T) {
	for _, tc := range []struct{ in, visible string }{
		{"plain text", "plain text"},
		{"<b>b</b><strong>s</strong><i>i</i><em>e</em><u>u</u><ins>n</ins><s>s</s><strike>k</strike><del>d</del>", "bsieunskd"},
		{`<a href="https://x.example/?a=1&amp;b=&quot;2&quot;">link</a>`, "link"},
		{`<span class="tg-spoiler">hid</span><tg-spoiler>den</tg-spoiler>`, "hidden"},
		{`<pre><code class="language-go">x := 1</code></pre>`, "x := 1"},
		{"<blockquote>quote</blockquote>", "quote"},
		{"&lt;&gt;&amp;&quot;&#39;&#x1F600;", `<>&"'😀`},
		{"<B>upper</B>", "upper"},
		{"it's \"quoted\"", "it's \"quoted\""},
	} {
		got, err := telegramtest.ValidateHTML(tc.in)
		if err != nil || got != tc.visible {
			t.Errorf("ValidateHTML(%q) = %q, %v; want %q", tc.in, got, err, tc.visible)
		}
	}
	for _, tc := range []struct{ in, msg string }{
		{"<script>x</script>", `Unsupported start tag "script" at byte offset 0`},
		{"<b>x", `Can't find end tag corresponding to start tag "b"`},
		{"x</b>", "Unexpected end tag at byte offset 1"},
		{"<b><i>x</b></i>", `Unmatched end tag at byte offset 7, expected "</i>", found "</b>"`},
		{"a & b", "Character '&' is reserved"},
		{"&nbsp;", "Character '&' is reserved"},
		{"a > b", "Character '>' is reserved"},
		{"<b", "Unclosed start tag"},
		{`<a href="x>y</a>`, "Unclosed start tag"},
		{"< b>", `Unsupported start tag ""`},
		{"<span>x</span>", `Tag "span" must have class "tg-spoiler"`},
		{`<a href="a&b">x</a>`, "Character '&' is reserved"},
		{"\xff", "UTF-8"},
	} {
		_, err := telegramtest.ValidateHTML(tc.in)
		if err == nil || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("ValidateHTML(%q) err = %v, want %q", tc.in, err, tc.msg)
		}
	}
}

func TestFormEncodedSend(t *testing.T) {
	s := telegramtest.NewServer(t, "1:tok")
	form := url.Values{
		"chat_id":      {"-100200"},
		"text":         {"<b>hi</b>"},
		"parse_mode":   {"HTML"},
		"reply_markup": {`{"inline_keyboard":[[{"text":"Go","url":"https://x.example"}]]}`},
	}
	resp, err := http.PostForm(s.URL+"/bot1:tok/sendMessage", form)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		OK     bool             `json:"ok"`
		Result telegram.Message `json:"result"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || !body.OK {
		t.Fatalf("decode: %v %+v", err, body)
	}
	if body.Result.Chat.Type != "supergroup" || body.Result.Text != "hi" {
		t.Fatalf("result = %+v", body.Result)
	}
	sent := s.Sent()
	if len(sent) != 1 || sent[0].ChatID != "-100200" || sent[0].Visible != "hi" ||
		sent[0].ReplyMarkup == nil || sent[0].ReplyMarkup.InlineKeyboard[0][0].Text != "Go" {
		t.Fatalf("sent = %+v", sent)
	}
}

func TestRejects(t *testing.T) {
	s := telegramtest.NewServer(t, "1:tok")
	c := s.Client()
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		call func() error
		msg  string
	}{
		{"caption too long", func() error {
			_, err := c.SendPhoto(ctx, "1", "https://x/p.png", strings.Repeat("é", telegram.MaxCaptionLen+1), telegram.SendOptions{})
			return err
		}, "Bad Request: message caption is too long"},
		{"no photo", func() error {
			_, err := c.SendPhoto(ctx, "1", "", "c", telegram.SendOptions{})
			return err
		}, "Bad Request: there is no photo in the request"},
		{"no document", func() error {
			_, err := c.SendDocument(ctx, "1", "", "c", telegram.SendOptions{})
			return err
		}, "Bad Request: there is no document in the request"},
		{"callback-less button", func() error {
			_, err := c.SendMessage(ctx, "1", "x", telegram.SendOptions{ReplyMarkup: &telegram.InlineKeyboardMarkup{
				InlineKeyboard: [][]telegram.InlineKeyboardButton{{{Text: "x"}}}}})
			return err
		}, "can't parse inline keyboard button"},
		{"bad parse mode", func() error {
			_, err := c.SendMessage(ctx, "1", "x", telegram.SendOptions{ParseMode: "XML"})
			return err
		}, "unsupported parse_mode"},
		{"too long in UTF-16", func() error {
			// 2049 emoji are 4098 UTF-16 units.
			_, err := c.SendMessage(ctx, "1", strings.Repeat("😀", 2049), telegram.SendOptions{})
			return err
		}, "message is too long"},
		{"empty chat", func() error {
			_, err := c.SendMessage(ctx, "", "x", telegram.SendOptions{})
			return err
		}, "chat_id is empty"},
	} {
		if err := tc.call(); err == nil || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s: err = %v, want %q", tc.name, err, tc.msg)
		}
	}
	if len(s.Sent()) != 0 {
		t.Fatalf("rejected sends recorded: %+v", s.Sent())
	}
	// Exactly at the limit is fine.
	if _, err := c.SendMessage(ctx, "1", strings.Repeat("я", telegram.MaxMessageLen), telegram.SendOptions{}); err != nil {
		t.Fatal(err)
	}
}

func TestUnknownMethodAndClearFailures(t *testing.T) {
	s := telegramtest.NewServer(t, "1:tok")
	resp, err := http.Post(s.URL+"/bot1:tok/sendSticker", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 404 {
		t.Fatalf("status = %d", resp.StatusCode)
	}

	c := s.Client()
	s.FailChat("5", telegramtest.FailBlocked())
	if _, err := c.SendMessage(context.Background(), "5", "x", telegram.SendOptions{}); telegram.Classify(err) != telegram.Blocked {
		t.Fatalf("err = %v", err)
	}
	s.ClearFailures()
	if _, err := c.SendMessage(context.Background(), "5", "x", telegram.SendOptions{}); err != nil {
		t.Fatal(err)
	}
}

func TestCloseReleasesLongPoll(t *testing.T) {
	s := telegramtest.NewServer(t, "1:tok")
	c := s.Client()
	done := make(chan error, 1)
	go func() {
		// A minute's poll: six times the bound below, yet short enough
		// that a Close that does not release it still ends the test.
		_, err := c.GetUpdates(context.Background(), 0, 60, nil)
		done <- err
	}()
	// Wait until the poll is in flight; ordering only, the bound is for a
	// poll that never arrives.
	arrived := time.Now().Add(10 * time.Second)
	for s.Calls("getUpdates") == 0 {
		if time.Now().After(arrived) {
			t.Fatal("the long poll never reached the server")
		}
		runtimeGosched()
	}
	closed := make(chan struct{})
	go func() {
		s.Close() // must not block for the minute's poll
		close(closed)
	}()
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("Close still blocked after 10s by a one-minute long poll")
	}
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the long poll had not returned 10s after Close")
	}
}

// Two long polls at once are counted as such; one after the other are not.
func TestConcurrentPollsCounted(t *testing.T) {
	s := telegramtest.NewServer(t, "1:tok")
	c := s.Client()
	if _, err := c.GetUpdates(context.Background(), 0, 0, nil); err != nil {
		t.Fatal(err)
	}
	if got := s.MaxConcurrentPolls(); got != 1 {
		t.Fatalf("one poll: MaxConcurrentPolls %d, want 1", got)
	}
	done := make(chan error, 2)
	for range 2 {
		go func() {
			_, err := c.GetUpdates(context.Background(), 0, 30, nil)
			done <- err
		}()
	}
	deadline := time.Now().Add(10 * time.Second)
	for s.PollsInFlight() < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("the two long polls never were in flight together (%d)", s.PollsInFlight())
		}
		runtimeGosched()
	}
	s.PushText(7, "/start") // answers both
	for range 2 {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("a long poll was not answered")
		}
	}
	// The fake finishes its bookkeeping just after the answer is written.
	for s.PollsInFlight() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d polls still in flight after both were answered", s.PollsInFlight())
		}
		runtimeGosched()
	}
	polls := s.Polls()
	if s.MaxConcurrentPolls() != 2 || len(polls) != 3 || polls[0].Concurrent != 1 || polls[2].Concurrent != 2 {
		t.Fatalf("MaxConcurrentPolls %d, polls %+v", s.MaxConcurrentPolls(), polls)
	}
	for _, p := range polls {
		if p.End.IsZero() || p.End.Before(p.Start) {
			t.Fatalf("poll %+v has no end after its start", p)
		}
	}
}
