package devices

import (
	"bytes"
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// importDB is an in-memory store of devices for fuzzing Import without a
// database: an email has an account when its length is even, and the
// store holds the database's rule that a push token belongs to at most
// one device, failing the test when a batch's plan breaks it.
type importDB struct {
	Store   // only InImportTx is used
	t       *testing.T
	devices map[string]*ImportedDevice
	created int
}

func (db *importDB) InImportTx(_ context.Context, fn func(ImportTx) error) error {
	return fn(importTx{db})
}

type importTx struct{ db *importDB }

func (tx importTx) AccountIDsByEmail(_ context.Context, emails []string) (map[string]string, error) {
	out := map[string]string{}
	for _, e := range emails {
		if len(e)%2 == 0 {
			out[e] = "acct:" + e
		}
	}
	return out, nil
}

func (tx importTx) TokenHolders(_ context.Context, tokens []string) (map[string]TokenHolder, error) {
	out := map[string]TokenHolder{}
	for _, d := range tx.db.devices {
		for _, tok := range tokens {
			if d.PushToken != "" && d.PushToken == tok {
				out[tok] = TokenHolder{DeviceID: d.ID, AccountID: d.AccountID}
			}
		}
	}
	return out, nil
}

func (tx importTx) DropTokens(_ context.Context, ids []string) error {
	for _, id := range ids {
		d, ok := tx.db.devices[id]
		if !ok {
			tx.db.t.Fatalf("the plan drops the token of device %s, which does not exist", id)
		}
		d.PushToken = ""
	}
	return nil
}

func (tx importTx) PutDevices(_ context.Context, ds []ImportedDevice) error {
	for _, d := range ds {
		if d.Platform != "android" && d.Platform != "ios" {
			tx.db.t.Fatalf("the plan writes a device of platform %q", d.Platform)
		}
		if old, ok := tx.db.devices[d.ID]; ok {
			if old.AccountID != d.AccountID {
				tx.db.t.Fatalf("the plan moves device %s from %s to %s", d.ID, old.AccountID, d.AccountID)
			}
			if d.Name == "" {
				d.Name = old.Name
			}
		} else {
			tx.db.created++
		}
		tx.db.devices[d.ID] = &d
	}
	held := map[string]string{}
	for _, d := range tx.db.devices {
		if d.PushToken == "" {
			continue
		}
		if other, ok := held[d.PushToken]; ok {
			tx.db.t.Fatalf("devices %s and %s both hold token %q", other, d.ID, d.PushToken)
		}
		held[d.PushToken] = d.ID
	}
	return nil
}

// FuzzImport runs an import file through Import against importDB, in
// batches of three: every non-blank line is imported, updated or rejected,
// once; the rejections are listed in file order up to the cap; devices
// created are those counted; no token ends up on two devices. Each line
// that parses is also parsed again from its normalized fields, which must
// give the same row.
func FuzzImport(f *testing.F) {
	for _, seed := range []string{
		`{"email":"a@example.com","platform":"android","pushToken":"tok-1","name":"Pixel"}` + "\n" +
			`{"email":"A@EXAMPLE.COM","platform":"ios","pushToken":"tok-2"}` + "\n\n" +
			`{"email":"a@example.com","platform":"android","pushToken":"tok-existing"}` + "\n" +
			`{"email":"a@example.com","platform":"android","pushToken":"tok-of-b","name":"Mine"}` + "\n" +
			`{"email":"ghost@example.com","platform":"android","pushToken":"tok-3"}` + "\r\n" +
			`{"email":"b@example.co","platform":"android","pushToken":"tok-1","x":1}`,
		`{"email":"a@example.com","platform":"windows","pushToken":"tok-4"}` + "\n" + `not json` + "\n" +
			`{"email":"a@example.com","platform":"android","pushToken":7}` + "\n" + `{"platform":"android","pushToken":"tok-5"}`,
		`{"email":"a@example.com","platform":"android","pushToken":"` + strings.Repeat("t", 5000) + `"}`,
		`{"email":"a@example.com","platform":"android","pushToken":"x","name":"` + strings.Repeat("n", 300) + `"}`,
		`{"email":"a@example.com","platform":"ios","pushToken":"a\u0000b"}`,
		"{\"email\":\"a@example.com\",\"platform\":\"ios\",\"pushToken\":\"\xff\"}",
		`{"email":"a@example.com","platform":"ios","pushToken":"tok","name":null}`,
		`[]` + "\n" + `null` + "\n" + `{}` + "\n" + `{"email":{"a":[[[[1]]]]}}` + "\n" + `{"email":1e999}`,
		"", "\n\n\r\n", " \t ", "\r", "\x00",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, file []byte) {
		db := &importDB{t: t, devices: map[string]*ImportedDevice{
			"dev-a": {ID: "dev-a", AccountID: "acct:a@example.com", Platform: "android", Name: "Old", PushToken: "tok-existing"},
			"dev-b": {ID: "dev-b", AccountID: "acct:b@example.co", Platform: "ios", Name: "B", PushToken: "tok-of-b"},
		}}
		const maxErrors = 4
		svc := NewService(db, nil, Config{ImportBatchSize: 3, MaxImportErrors: maxErrors})
		res, err := svc.Import(context.Background(), bytes.NewReader(file), nil)
		if err != nil {
			t.Fatalf("import failed without a store failure: %v", err)
		}

		lines := strings.Split(string(file), "\n")
		if lines[len(lines)-1] == "" {
			lines = lines[:len(lines)-1]
		}
		nonBlank := 0
		for _, l := range lines {
			if len(bytes.TrimSpace([]byte(l))) > 0 {
				nonBlank++
			}
		}
		if got := res.Imported + res.Updated + res.Rejected; got != nonBlank {
			t.Fatalf("%d imported + %d updated + %d rejected = %d, but the file has %d non-blank lines", res.Imported, res.Updated, res.Rejected, got, nonBlank)
		}
		if db.created != res.Imported {
			t.Fatalf("%d devices created, %d counted imported", db.created, res.Imported)
		}
		if want := min(res.Rejected, maxErrors); len(res.Errors) != want || res.ErrorsTruncated != (res.Rejected > maxErrors) {
			t.Fatalf("%d rejected, %d errors listed (truncated %v)", res.Rejected, len(res.Errors), res.ErrorsTruncated)
		}
		prev := 0
		for _, e := range res.Errors {
			if e.Line <= prev || e.Line > len(lines) || e.Reason == "" {
				t.Fatalf("errors %+v: not in file order within %d lines, or without a reason", res.Errors, len(lines))
			}
			prev = e.Line
		}

		for _, l := range lines {
			row, reason := svc.parseLine([]byte(l))
			if reason != "" {
				continue
			}
			line, err := json.Marshal(map[string]string{"email": row.Email, "platform": row.Platform, "pushToken": row.PushToken, "name": row.Name})
			if err != nil {
				t.Fatal(err)
			}
			again, reason := svc.parseLine(line)
			if reason != "" || !reflect.DeepEqual(row, again) {
				t.Fatalf("line %q parsed to %+v; its normalized form %s parsed to %+v (%s)", l, row, line, again, reason)
			}
			if row.NewName == "" {
				t.Fatalf("line %q would create a device without a name", l)
			}
		}
	})
}
