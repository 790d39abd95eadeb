package main

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/accounts"
	"github.com/herald-vpn/herald/internal/messenger"
	"github.com/herald-vpn/herald/internal/sessions"
	"github.com/herald-vpn/herald/internal/sqlstore/sqlstoretest"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// TestE2EGraphQLPerRecordFieldsBatched: a page of 500 accounts asking for
// each one's sessions and linked chat runs a bounded number of store
// queries, not one per account and field. The queries are counted at the
// store, by its tracing hook: one "db …" span each, in the request's
// trace.
func TestE2EGraphQLPerRecordFieldsBatched(t *testing.T) {
	const (
		page = 500
		// Admission (the token's session), the page, one query for the
		// page's sessions, one for its chats, and some room.
		maxQueries = 8
	)
	forEachDialect(t, func(t *testing.T, d sqlstoretest.Dialect) {
		exporter := tracetest.NewInMemoryExporter()
		tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exporter))
		t.Cleanup(func() { tp.Shutdown(context.Background()) })
		h := startHeraldTraced(t, d, nil, tp)
		admin := newAdminToken(t, h, "ops@example.com")
		ids := seedRecords(t, h, page)

		query := `{ users(first: 500) { nodes { id sessions { id userAgent } messengerChat { chatId status } } } }`
		status, body := h.graphql(t, query, nil, withBearer(admin), withHeader("X-Request-ID", "batched-page"))
		if status != http.StatusOK {
			t.Fatalf("users page: %d %v", status, body)
		}
		nodes, _ := jsonPath(body, "data", "users", "nodes").([]any)
		if len(nodes) != page {
			t.Fatalf("the page has %d accounts, want %d", len(nodes), page)
		}
		// Every account of the page got its own session and chat, not a
		// neighbour's.
		seen := 0
		for _, n := range nodes {
			id, _ := jsonPath(n, "id").(string)
			i, ok := ids[id]
			if !ok {
				continue // the admin
			}
			seen++
			sess, _ := jsonPath(n, "sessions").([]any)
			if len(sess) != 1 || jsonPath(sess[0], "id") != fmt.Sprintf("batch-session-%03d", i) || jsonPath(sess[0], "userAgent") != fmt.Sprintf("agent %d", i) {
				t.Fatalf("account %s: sessions %v", id, sess)
			}
			if chat := jsonPath(n, "messengerChat", "chatId"); chat != fmt.Sprint(700000+i) {
				t.Fatalf("account %s: messengerChat.chatId %v, want %d", id, chat, 700000+i)
			}
		}
		if seen != page-1 {
			t.Fatalf("%d seeded accounts in the page, want %d", seen, page-1)
		}

		queries := queriesOfRequest(t, exporter.GetSpans(), "batched-page")
		t.Logf("%s: %d store queries for a page of %d accounts with sessions and messengerChat", d, queries, page)
		if queries > maxQueries {
			t.Errorf("the page ran %d store queries, want at most %d", queries, maxQueries)
		}

		// Four such pages, aliased, cost more than the bound: refused
		// before anything runs.
		one := `users(first: 500) { nodes { id sessions { id createdAt lastUsedAt userAgent ip } messengerChat { chatId status } } }`
		status, body = h.graphql(t, "{ a: "+one+" b: "+one+" c: "+one+" d: "+one+" }", nil, withBearer(admin), withHeader("X-Request-ID", "four-pages"))
		if errs, _ := body["errors"].([]any); status != http.StatusBadRequest || len(errs) != 1 || jsonPath(errs[0], "extensions", "code") != "QUERY_TOO_COMPLEX" {
			t.Fatalf("four aliased pages: %d %v", status, body)
		}
		if queries := queriesOfRequest(t, exporter.GetSpans(), "four-pages"); queries > 2 {
			t.Errorf("the refused document ran %d store queries", queries)
		}
	})
}

// seedRecords writes n-1 accounts (the admin is the page's n-th), each
// with one live session and one linked, subscribed Telegram chat, straight
// into the store; it returns their ids with their numbers.
func seedRecords(t *testing.T, h *herald, n int) map[string]int {
	t.Helper()
	db := h.store(t)
	ctx := context.Background()
	now := time.Now()
	ids := map[string]int{}
	for i := range n - 1 {
		id := fmt.Sprintf("batch-account-%03d", i)
		ids[id] = i
		if _, _, err := accounts.Create(ctx, db, accounts.NewAccount{ID: id, Email: fmt.Sprintf("batch-%03d@example.com", i), PasswordHash: "x",
			ReferralCode: fmt.Sprintf("BATCH%03d", i), Trial: time.Hour, Verified: true}); err != nil {
			t.Fatal(err)
		}
		s := sessions.Session{ID: fmt.Sprintf("batch-session-%03d", i), AccountID: id, CreatedAt: now, ExpiresAt: now.Add(time.Hour),
			UserAgent: fmt.Sprintf("agent %d", i), IP: "192.0.2.1"}
		if err := db.CreateSession(ctx, s, []byte("refresh-"+id)); err != nil {
			t.Fatal(err)
		}
		if _, err := db.ApplySubscriberChange(ctx, messenger.Change{Kind: messenger.Subscribe, ChatID: int64(700000 + i), LinkUserID: id}); err != nil {
			t.Fatal(err)
		}
	}
	return ids
}

// queriesOfRequest counts the store's query spans in the trace of the
// request whose X-Request-ID is id.
func queriesOfRequest(t *testing.T, spans tracetest.SpanStubs, id string) int {
	t.Helper()
	var request *tracetest.SpanStub
	for i, s := range spans {
		for _, a := range s.Attributes {
			if a.Key == "http.request_id" && a.Value.AsString() == id {
				request = &spans[i]
			}
		}
	}
	if request == nil {
		t.Fatalf("no span of the request %s among %d spans", id, len(spans))
	}
	n := 0
	for _, s := range spans {
		if s.SpanContext.TraceID() == request.SpanContext.TraceID() && strings.HasPrefix(s.Name, "db ") {
			n++
		}
	}
	return n
}
