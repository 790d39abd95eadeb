// Package view holds Herald's wire types: one struct per resource as
// clients see it, with a constructor from the domain value. Both doors
// answer with them (REST marshals them, gqlgen binds the GraphQL object
// types to them through gqlgen.yml's models), live progress travels
// between replicas as them, and a test holds apidoc/openapi.yaml's schemas to
// them. A field added to a resource is added here once.
//
// A struct's fields are in the order its JSON has always had: the order of
// the struct the door wrote, or the sorted keys of the map it wrote.
//
// Times are UTC, whole seconds (2026-11-29T10:00:00Z). A nullable field is
// a pointer: without omitempty it is null when unset; with omitempty the
// REST JSON leaves it out (and GraphQL shows null).
package view

import (
	"encoding/json"
	"time"

	"github.com/herald-vpn/herald/internal/live"
)

// PageInfo is where a listing goes on: pass endCursor as after.
type PageInfo struct {
	EndCursor   *string `json:"endCursor"`
	HasNextPage bool    `json:"hasNextPage"`
}

// NewPageInfo is the pageInfo of a page whose last cursor is end ("" when
// there is none).
func NewPageInfo(end string, more bool) PageInfo {
	return PageInfo{EndCursor: nonEmpty(end), HasNextPage: more}
}

// Page is a REST listing: the page's records and where it goes on. GraphQL
// has a connection type per record instead.
type Page[T any] struct {
	Nodes    []T      `json:"nodes"`
	PageInfo PageInfo `json:"pageInfo"`
}

// NewPage renders items with convert; nodes is [] (not null) when empty.
func NewPage[I, T any](items []I, convert func(I) T, end string, more bool) Page[T] {
	return Page[T]{Nodes: All(items, convert), PageInfo: NewPageInfo(end, more)}
}

// All renders every item with convert, as [] (not null) when there are
// none.
func All[I, T any](items []I, convert func(I) T) []T {
	out := make([]T, 0, len(items))
	for _, it := range items {
		out = append(out, convert(it))
	}
	return out
}

// jsonCodec writes a domain value as the JSON of its wire type and reads it
// back.
func jsonCodec[D, W any](toWire func(D) W, fromWire func(W) D) live.Codec[D] {
	return live.Codec[D]{
		Encode: func(d D) ([]byte, error) { return json.Marshal(toWire(d)) },
		Decode: func(b []byte) (D, error) {
			var w W
			err := json.Unmarshal(b, &w)
			return fromWire(w), err
		},
	}
}

// seconds is t as answers show times: UTC, whole seconds.
func seconds(t time.Time) time.Time { return t.UTC().Truncate(time.Second) }

// optionalSeconds is an optional time as answers show it; nil stays nil.
func optionalSeconds(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := seconds(*t)
	return &u
}

// nonEmpty is s, or nil when it is empty.
func nonEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// deref is *p, or the zero value when p is nil.
func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
