package devices_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/devices"
	"github.com/herald-vpn/herald/internal/sqlstore/sqlstoretest"
)

func TestImport(t *testing.T) {
	each(t, func(t *testing.T, e env) {
		ctx := context.Background()
		a := e.account(t, "a@example.com")
		b := e.account(t, "b@example.com")
		existing, err := e.svc.Register(ctx, a, "android", "tok-existing", "Old name")
		if err != nil {
			t.Fatal(err)
		}
		other, _ := e.svc.Register(ctx, b, "android", "tok-of-b", "")
		file := strings.Join([]string{
			`{"email":"a@example.com","platform":"android","pushToken":"tok-1","name":"Pixel"}`, // 1 imported
			`{"email":"A@EXAMPLE.COM","platform":"ios","pushToken":"tok-2"}`,                    // 2 imported (email normalized)
			``, // 3 blank, skipped
			`{"email":"a@example.com","platform":"android","pushToken":"tok-existing"}`,           // 4 updated, name kept
			`{"email":"a@example.com","platform":"android","pushToken":"tok-of-b","name":"Mine"}`, // 5 imported, moved from b
			`{"email":"ghost@example.com","platform":"android","pushToken":"tok-3"}`,              // 6 unknown account
			`{"email":"a@example.com","platform":"windows","pushToken":"tok-4"}`,                  // 7 bad platform
			`{"email":"a@example.com","platform":"android","pushToken":""}`,                       // 8 empty token
			`{"email":"a@example.com","platform":"android"}`,                                      // 9 no token
			`not json`, // 10
			`{"platform":"android","pushToken":"tok-5"}`,                               // 11 no email
			`{"email":"not-an-email","platform":"android","pushToken":"tok-6"}`,        // 12 bad email
			`{"email":"a@example.com","platform":"android","pushToken":7}`,             // 13 wrong type
			`{"email":"b@example.com","platform":"android","pushToken":"tok-7","x":1}`, // 14 imported, extra field ignored
			`{"email":"b@example.com","platform":"ios","pushToken":"tok-7"}`,           // 15 same token, same account: updated
		}, "\n") + "\r\n" + `{"email":"b@example.com","platform":"android","pushToken":"tok-last"}` // 16, CRLF and no final newline

		svc := devices.NewService(e.db, e.plans, devices.Config{ImportBatchSize: 4})
		var progress []int
		res, err := svc.Import(ctx, strings.NewReader(file), func(done int) { progress = append(progress, done) })
		if err != nil {
			t.Fatal(err)
		}
		wantErrs := []devices.LineError{
			{6, "no account has the email ghost@example.com"},
			{7, `platform must be android, ios, web or huawei, not "windows"`},
			{8, "pushToken is required"},
			{9, "pushToken is required"},
			{10, "not a JSON object"},
			{11, "email is required"},
			{12, `email "not-an-email" is not a valid address`},
			{13, "pushToken must be a string"},
		}
		// In file order, as promised: not sorted here.
		if res.Imported != 5 || res.Updated != 2 || res.Rejected != len(wantErrs) || !slices.Equal(res.Errors, wantErrs) {
			t.Fatalf("result %+v\nwant errors %+v", res, wantErrs)
		}
		if len(progress) == 0 || progress[len(progress)-1] != 16 || !slices.IsSorted(progress) {
			t.Fatalf("progress %v", progress)
		}
		list, _ := e.svc.List(ctx, a)
		byToken := map[string]devices.Device{}
		for _, d := range list {
			byToken[d.PushToken] = d
		}
		if d := byToken["tok-1"]; d.Name != "Pixel" || d.Platform != "android" || d.PushTokenStatus != "valid" {
			t.Errorf("tok-1: %+v", d)
		}
		if d := byToken["tok-2"]; d.Name != "iOS device" || d.Platform != "ios" {
			t.Errorf("tok-2: %+v", d)
		}
		if d := byToken["tok-existing"]; d.ID != existing.ID || d.Name != "Old name" {
			t.Errorf("tok-existing: %+v", d)
		}
		if d := byToken["tok-of-b"]; d.Name != "Mine" || d.AccountID != a {
			t.Errorf("tok-of-b: %+v", d)
		}
		if d, _ := e.db.DeviceByID(ctx, other.ID); d.PushToken != "" || d.PushTokenStatus != "invalid" {
			t.Errorf("b's old device kept the token: %+v", d)
		}
		// Plan limits do not apply to an import: a has 4 devices on a trial.
		if len(list) != 4 {
			t.Errorf("a has %d devices, want 4", len(list))
		}
		lb, _ := e.svc.List(ctx, b)
		if len(lb) != 3 { // other (tokenless), tok-7 (ios now), tok-last
			t.Errorf("b has %d devices: %+v", len(lb), lb)
		}
	})
}

func TestImportLongLineAndTruncatedErrors(t *testing.T) {
	e := open(t, sqlstoretest.NewURL(t, "sqlite"))
	e.account(t, "a@example.com")
	var buf bytes.Buffer
	buf.WriteString(`{"email":"a@example.com","platform":"android","pushToken":"` + strings.Repeat("x", devices.MaxImportLineLen) + "\"}\n")
	for range 5 {
		buf.WriteString("garbage\n")
	}
	buf.WriteString(`{"email":"a@example.com","platform":"android","pushToken":"ok"}` + "\n")
	svc := devices.NewService(e.db, e.plans, devices.Config{MaxImportErrors: 3})
	res, err := svc.Import(context.Background(), &buf, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Imported != 1 || res.Rejected != 6 || len(res.Errors) != 3 || !res.ErrorsTruncated || !strings.Contains(res.Errors[0].Reason, "longer than") {
		t.Fatalf("result %+v", res)
	}
}

// BenchmarkImport imports JSON Lines files of fresh devices for 1,000
// accounts and reports lines per second; each iteration is one file of
// 100,000 lines (-benchtime=10x imports a million).
func BenchmarkImport(b *testing.B) {
	for _, d := range sqlstoretest.Dialects() {
		b.Run(string(d), func(b *testing.B) {
			e := open(b, sqlstoretest.NewURL(b, d))
			const accounts = 1000
			const importLines = 100_000
			for i := range accounts {
				e.account(b, fmt.Sprintf("user%d@example.com", i))
			}
			svc := devices.NewService(e.db, e.plans, devices.Config{})
			ctx := context.Background()
			b.ResetTimer()
			start := time.Now()
			lines := 0
			for n := 0; b.Loop(); n++ {
				r := importFile(n, importLines, accounts)
				res, err := svc.Import(ctx, r, nil)
				if err != nil {
					b.Fatal(err)
				}
				if res.Imported != importLines {
					b.Fatalf("imported %d of %d: %+v", res.Imported, importLines, res.Errors[:min(len(res.Errors), 3)])
				}
				lines += importLines
			}
			b.ReportMetric(float64(lines)/time.Since(start).Seconds(), "lines/s")
		})
	}
}

// importFile generates n lines of fresh tokens, round-robin over accounts,
// without holding the file in memory.
func importFile(file, n, accounts int) io.Reader {
	pr, pw := io.Pipe()
	go func() {
		var buf bytes.Buffer
		for i := range n {
			platform := "android"
			if i%4 == 0 {
				platform = "ios"
			}
			fmt.Fprintf(&buf, `{"email":"user%d@example.com","platform":"%s","pushToken":"f%d-tok-%09d-abcdefghijklmnopqrstuvwxyz0123456789","name":"Device %d"}`+"\n", i%accounts, platform, file, i, i)
			if buf.Len() > 64<<10 {
				pw.Write(buf.Bytes())
				buf.Reset()
			}
		}
		pw.Write(buf.Bytes())
		pw.Close()
	}()
	return pr
}
