package rest

import (
	"bytes"
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/herald-vpn/herald/internal/api"
	"github.com/herald-vpn/herald/internal/apperr"
)

// bodyCheck decodes one request body as a route's handler does and holds
// the decoder to its promises (checkBody).
type bodyCheck struct {
	name  string // the body type's name
	check func(t *testing.T, body []byte)
}

func bodyOf[In any]() bodyCheck {
	return bodyCheck{name: reflect.TypeFor[In]().Name(), check: checkBody[In]}
}

// restBodies is every body a REST route decodes; TestRESTBodiesAreFuzzed
// holds the list to the handlers.
var restBodies = []bodyCheck{
	bodyOf[registerBody](),
	bodyOf[inboxMarkAllBody](),
	bodyOf[verifyBody](),
	bodyOf[resendVerificationBody](),
	bodyOf[loginBody](),
	bodyOf[refreshBody](),
	bodyOf[requestPasswordResetBody](),
	bodyOf[resetPasswordBody](),
	bodyOf[deleteMeBody](),
	bodyOf[setMyLocaleBody](),
	bodyOf[setSubscriptionBody](),
	bodyOf[setUserLocaleBody](),
	bodyOf[disableUserBody](),
	bodyOf[addBanBody](),
	bodyOf[messengerPreviewBody](),
	bodyOf[registerDeviceBody](),
	bodyOf[updatePushTokenBody](),
	bodyOf[sendToUserBody](),
	bodyOf[sendToDeviceBody](),
	bodyOf[broadcastBody](),
	bodyOf[preferencesBody](),
	bodyOf[sendMessengerMessageBody](),
	bodyOf[sendMessengerBroadcastBody](),
	bodyOf[createAPIKeyBody](),
	bodyOf[createWebhookBody](),
	bodyOf[appleTransactionBody](),
	bodyOf[googlePurchaseBody](),
	bodyOf[providerTokenBody](),
	bodyOf[linkIdentityBody](),
	bodyOf[guestBody](),
	bodyOf[upgradeGuestBody](),
	bodyOf[checkoutBody](),
	bodyOf[changeEmailBody](),
	bodyOf[confirmEmailChangeBody](),
	bodyOf[cancelEmailChangeBody](),
	bodyOf[changePasswordBody](),
	bodyOf[completeMFALoginBody](),
	bodyOf[mfaCodeBody](),
	bodyOf[enrollTOTPBody](),
	bodyOf[finishPasskeyRegistrationBody](),
	bodyOf[renamePasskeyBody](),
	bodyOf[finishPasskeyLoginBody](),
	bodyOf[beginPasskeyMFABody](),
	bodyOf[finishPasskeyMFABody](),
	bodyOf[verifyPasskeyBody](),
}

// checkBody sends body through handle[In], the REST door's decoding, with
// a handler that keeps what it was given. A refusal is an error envelope
// with a 4xx status, a code and, for VALIDATION_ERROR, the field; an
// accepted body is exactly one JSON value, and what was decoded from it
// encodes to JSON that decodes (strictly, again) to the same encoding.
func checkBody[In any](t *testing.T, body []byte) {
	t.Helper()
	var got In
	called := false
	h := handle(http.StatusOK, func(_ *http.Request, in In) (any, error) {
		got, called = in, true
		return struct{}{}, nil
	})
	req := httptest.NewRequest(http.MethodPost, "/api/v1/fuzz", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	h(rec, req)
	name := reflect.TypeFor[In]().Name()

	if !called {
		var env struct {
			Success *bool `json:"success"`
			Error   struct {
				Code    string         `json:"code"`
				Details map[string]any `json:"details"`
			} `json:"error"`
		}
		if rec.Code < 400 || rec.Code > 499 {
			t.Fatalf("%s: refused %q with status %d, want a 4xx: %s", name, body, rec.Code, rec.Body)
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &env); err != nil || env.Success == nil || *env.Success || env.Error.Code == "" {
			t.Fatalf("%s: refused %q without an error envelope: %s", name, body, rec.Body)
		}
		if env.Error.Code == "VALIDATION_ERROR" && env.Error.Details["field"] == "" {
			t.Fatalf("%s: VALIDATION_ERROR for %q names no field: %s", name, body, rec.Body)
		}
		return
	}
	if rec.Code != http.StatusOK {
		t.Fatalf("%s: decoded %q but answered %d: %s", name, body, rec.Code, rec.Body)
	}
	if !json.Valid(body) {
		t.Fatalf("%s: accepted %q, which is not one JSON value", name, body)
	}
	first, err := json.Marshal(got)
	if err != nil {
		t.Fatalf("%s: accepted %q but cannot encode what it decoded (%+v): %v", name, body, got, err)
	}
	var again In
	if err := api.Unmarshal(first, &again); err != nil {
		t.Fatalf("%s: accepted %q, decoded %+v, whose encoding %s is refused: %v", name, body, got, first, err)
	}
	second, err := json.Marshal(again)
	if err != nil || !bytes.Equal(first, second) {
		t.Fatalf("%s: %q decoded, encoded and decoded again changed:\n first  %s\n second %s (%v)", name, body, first, second, err)
	}
}

// FuzzRESTBody feeds one body to the decoding of every REST route
// (restBodies): none panics, each refuses with a typed 4xx envelope or
// decodes a value that survives a round trip.
func FuzzRESTBody(f *testing.F) {
	for _, seed := range []string{
		`{"email":"ada@example.com","password":"correct horse battery","referral":"FRIEND","locale":"fr-CA"}`,
		`{"refreshToken":"rt_abc"}`,
		`{"plan":"pro","expiresAt":"2030-01-02T03:04:05Z"}`,
		`{"plan":"pro","expiresAt":"2030-01-02T03:04:05.123456789+05:30"}`,
		`{"platform":"android","pushToken":"tok-1","name":"Pixel"}`,
		`{"notification":{"subject":"Hi","content":"Body","data":{"n":12345678901234567890,"s":"x","a":[1,{"b":null}]},"options":{"priority":"high","ttl":60,"badge":3}},"channels":["push","email"]}`,
		`{"notification":{"subject":"Hi","content":"Body"},"sendAt":"2030-01-01T00:00:00Z","audience":{"plans":["pro"]}}`,
		`{"chatId":"123","message":"<b>hi</b>","options":{"silent":true}}`,
		`{"name":"ci","scopes":["notifications:send"],"rateLimit":100,"expiresAt":null}`,
		`{"url":"https://hooks.example.com/h","description":"d","eventTypes":["user.created"]}`,
		`{"ip":"203.0.113.7","reason":"abuse"}`,
		`{"signedTransaction":"eyJhbGciOiJFUzI1NiJ9.e30.c2ln"}`,
		`{"purchaseToken":"tok.abc","productId":"premium_monthly"}`,
		`{"productId":"price_1Premium"}`,
		``, ` `, `null`, `{}`, `[]`, `"x"`, `{"email":1}`, `{"email":"a"}}`, `{"email":"a"}]`, `{"email":"a"} {}`,
		`{"unknown":1}`, `{"rateLimit":1e400}`, `{"rateLimit":99999999999999999999}`, `{"rateLimit":-0}`,
		`{"expiresAt":"10000-01-01T00:00:00Z"}`, `{"expiresAt":"2030-01-01T00:00:00+24:00"}`,
		"{\"email\":\"\x00\"}", "{\"email\":\"\xff\xfe\"}", `{"email":"\ud800"}`,
		`{"notification":{"data":` + strings.Repeat(`[`, 5000) + strings.Repeat(`]`, 5000) + `}}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, b := range restBodies {
			b.check(t, body)
		}
		// The sends then read the notification's data (notifications.
		// DecodeData): a refusal is still a typed 4xx.
		var n notificationInput
		if api.Unmarshal(body, &n) == nil {
			if _, err := n.notification(); err != nil {
				if ae := apperr.As(err); ae.Code == apperr.Internal || ae.Status() < 400 || ae.Status() > 499 {
					t.Fatalf("notification %q refused with %v (status %d), want a typed 4xx", body, err, ae.Status())
				}
			}
		}
	})
}

// TestRESTBodiesAreFuzzed holds restBodies to the package: every type a
// handle call decodes and every package-level …Body type is in it.
func TestRESTBodiesAreFuzzed(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var want []string
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		file, err := parser.ParseFile(fset, path, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(file, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.TypeSpec:
				if strings.HasSuffix(n.Name.Name, "Body") && n.Name.Name != "noBody" {
					want = append(want, n.Name.Name)
				}
			case *ast.CallExpr:
				if fn, ok := n.Fun.(*ast.Ident); ok && fn.Name == "handle" && len(n.Args) == 2 {
					if lit, ok := n.Args[1].(*ast.FuncLit); ok && len(lit.Type.Params.List) == 2 {
						if id, ok := lit.Type.Params.List[1].Type.(*ast.Ident); ok && id.Name != "noBody" {
							want = append(want, id.Name)
						}
					}
				}
			}
			return true
		})
	}
	var have []string
	for _, b := range restBodies {
		have = append(have, b.name)
	}
	slices.Sort(want)
	want = slices.Compact(want)
	slices.Sort(have)
	if len(want) < 20 {
		t.Fatalf("found only %d body types in the package (%v): has the way handlers decode changed?", len(want), want)
	}
	if !slices.Equal(want, have) {
		t.Fatalf("restBodies lists %v\nthe handlers decode %v", have, want)
	}
}
