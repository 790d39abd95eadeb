package metrics_test

import (
	"context"
	"errors"
	"log/slog"
	"testing"

	"github.com/herald-vpn/herald/internal/mail"
	"github.com/herald-vpn/herald/internal/metrics"
)

type failingSender struct{}

func (failingSender) Send(context.Context, mail.Message) error { return errors.New("refused") }

type acceptingSender struct{}

func (acceptingSender) Send(context.Context, mail.Message) error { return nil }

// emails returns herald_emails_total by result.
func emails(t *testing.T, m *metrics.Metrics) map[string]float64 {
	t.Helper()
	families, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, f := range families {
		if f.GetName() != "herald_emails_total" {
			continue
		}
		for _, s := range f.GetMetric() {
			for _, l := range s.GetLabel() {
				if l.GetName() == "result" {
					got[l.GetValue()] = s.GetCounter().GetValue()
				}
			}
		}
	}
	return got
}

func TestEmailsTotal(t *testing.T) {
	for _, tc := range []struct {
		name   string
		sender mail.Sender
		want   map[string]float64
	}{
		{"smtp accepted", acceptingSender{}, map[string]float64{"sent": 2, "failed": 0}},
		{"smtp refused", failingSender{}, map[string]float64{"sent": 0, "failed": 2}},
		{"development mailer", mail.NewDev(slog.New(slog.DiscardHandler)), map[string]float64{"logged": 2, "failed": 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := metrics.New()
			s := m.CountingMailer(tc.sender)
			for range 2 {
				_ = s.Send(t.Context(), mail.Message{To: "a@example.com", Text: "x"})
			}
			got := emails(t, m)
			if len(got) != len(tc.want) {
				t.Errorf("results = %v, want %v", got, tc.want)
			}
			for k, v := range tc.want {
				if got[k] != v {
					t.Errorf("herald_emails_total{result=%q} = %v, want %v (all: %v)", k, got[k], v, got)
				}
			}
		})
	}
}
