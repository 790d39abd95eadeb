package telegram_test

import (
	"testing"

	"github.com/herald-vpn/herald/internal/telegram"
)

func TestParseCommand(t *testing.T) {
	for _, tc := range []struct{ in, cmd, payload string }{
		{"/start", "start", ""},
		{"/start abc123", "start", "abc123"},
		{"/start@HeraldBot abc123", "start", "abc123"},
		{"/START@herald_bot   ref-x  ", "start", "ref-x"},
		{"/start\nline", "start", "line"},
		{"/help me please", "help", "me please"},
		{"  /status", "status", ""},
		{"hello /start", "", ""},
		{"/", "", ""},
		{"/ 5", "", ""},
		{"/usr/bin", "", ""},
		{"/@bot", "", ""},
		{"", "", ""},
	} {
		cmd, payload := telegram.ParseCommand(tc.in)
		if cmd != tc.cmd || payload != tc.payload {
			t.Errorf("ParseCommand(%q) = %q, %q; want %q, %q", tc.in, cmd, payload, tc.cmd, tc.payload)
		}
	}
}
