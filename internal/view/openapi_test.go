package view_test

// The OpenAPI document and the wire types describe the same answers: every
// property of a schema is a field of its type with the same JSON name and a
// compatible type, every field is a property, a field left out when unset
// is not required, a field written as null may be null, and every type of
// this package is reached from the document.

import (
	"context"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"net/http"
	"os"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/herald-vpn/herald/apidoc"
	"github.com/herald-vpn/herald/internal/view"
)

func typeOf[T any]() reflect.Type { return reflect.TypeFor[T]() }

// schemas names, for each component schema of an answer, the type the doors
// write it from. A dotted name is a property of a schema. Input types are
// decoded, not written: only their names and types are compared.
var schemas = []struct {
	name  string
	typ   reflect.Type
	input bool
}{
	{"User", typeOf[view.User](), false},
	{"Subscription", typeOf[view.UserSubscription](), false},
	{"UserRecord", typeOf[view.UserRecord](), false},
	{"UserRecordPage", typeOf[view.Page[view.UserRecord]](), false},
	{"UserDetail", typeOf[view.UserDetail](), false},
	{"PageInfo", typeOf[view.PageInfo](), false},
	{"Session", typeOf[view.Session](), false},
	{"EmailChangeRequest", typeOf[view.EmailChangeRequest](), false},
	{"EmailChangeCancel", typeOf[view.EmailChangeCancel](), false},
	{"SessionEnd", typeOf[view.SessionEnd](), false},
	{"Unsubscribed", typeOf[view.Unsubscribed](), false},
	{"PasswordChange", typeOf[view.PasswordChange](), false},
	{"Tokens", typeOf[view.Tokens](), false},
	{"MfaFactor", typeOf[view.MFAFactor](), false},
	{"MfaStatus", typeOf[view.MFAStatus](), false},
	{"TotpEnrollment", typeOf[view.TOTPEnrollment](), false},
	{"MfaConfirmed", typeOf[view.MFAConfirmed](), false},
	{"RecoveryCodes", typeOf[view.RecoveryCodes](), false},
	{"MfaFactorRemoved", typeOf[view.MFAFactorRemoved](), false},
	{"MfaReset", typeOf[view.MFAReset](), false},
	{"Passkey", typeOf[view.Passkey](), false},
	{"PasskeyOptions", typeOf[view.PasskeyOptions](), false},
	{"PasskeyRemoved", typeOf[view.PasskeyRemoved](), false},
	{"Registration", typeOf[view.Registration](), false},
	{"Verified", typeOf[view.Verified](), false},
	{"CodeSent", typeOf[view.CodeSent](), false},
	{"ResetRequested", typeOf[view.ResetRequested](), false},
	{"PasswordReset", typeOf[view.PasswordReset](), false},
	{"LoggedOut", typeOf[view.LoggedOut](), false},
	{"Device", typeOf[view.Device](), false},
	{"DeviceRemoved", typeOf[view.DeviceRemoved](), false},
	{"ApiKey", typeOf[view.APIKey](), false},
	{"CreatedApiKey", typeOf[view.CreatedAPIKey](), false},
	{"NotificationJob", typeOf[view.NotificationJob](), false},
	{"NotificationJobPage", typeOf[view.Page[view.NotificationJob]](), false},
	{"BroadcastResult", typeOf[view.BroadcastResult](), false},
	{"SendNotificationResult", typeOf[view.SendNotificationResult](), false},
	{"SendToUserResult", typeOf[view.SendToUserResult](), false},
	{"MessengerBroadcast", typeOf[view.MessengerBroadcast](), false},
	{"MessengerSubscriber", typeOf[view.MessengerSubscriber](), false},
	{"MessengerSubscriberPage", typeOf[view.Page[view.MessengerSubscriber]](), false},
	{"MessengerBotStatus", typeOf[view.MessengerBotStatus](), false},
	{"MessengerPreview", typeOf[view.MessengerPreview](), false},
	{"MessengerMessageResult", typeOf[view.MessengerMessageResult](), false},
	{"MessengerButton", typeOf[view.MessengerButton](), true},
	{"MessengerMessageRequest.options", typeOf[view.MessengerOptions](), true},
	{"MessengerBroadcastRequest.options", typeOf[view.MessengerOptions](), true},
	{"WebhookEndpoint", typeOf[view.WebhookEndpoint](), false},
	{"CreatedWebhookEndpoint", typeOf[view.CreatedWebhookEndpoint](), false},
	{"WebhookDelivery", typeOf[view.WebhookDelivery](), false},
	{"WebhookDeliveryPage", typeOf[view.Page[view.WebhookDelivery]](), false},
	{"AdminOverview", typeOf[view.AdminOverview](), false},
	{"Ban", typeOf[view.Ban](), false},
	{"BanPage", typeOf[view.Page[view.Ban]](), false},
	{"SubscriptionDetail", typeOf[view.SubscriptionDetail](), false},
	{"UserSubscriptionDetail", typeOf[view.UserSubscriptionDetail](), false},
	{"Entitlement", typeOf[view.Entitlement](), false},
	{"EntitlementChange", typeOf[view.EntitlementChange](), false},
	{"RedirectURL", typeOf[view.RedirectURL](), false},
	{"SecurityEvent", typeOf[view.SecurityEvent](), false},
	{"InboxItem", typeOf[view.InboxItem](), false},
	{"InboxItemPage", typeOf[view.Page[view.InboxItem]](), false},
	{"InboxCounts", typeOf[view.InboxCounts](), false},
	{"InboxEvent", typeOf[view.InboxEvent](), false},
	{"SecurityEventPage", typeOf[view.Page[view.SecurityEvent]](), false},
	{"Identity", typeOf[view.Identity](), false},
	{"IdentityRemoved", typeOf[view.IdentityRemoved](), false},
	{"SignIn", typeOf[view.SignIn](), false},
	{"NotificationPreferences", typeOf[view.NotificationPreferences](), false},
	{"CategoryPreferences", typeOf[view.CategoryPreferences](), false},
	{"ChannelSwitches", typeOf[view.ChannelSwitches](), false},
	{"SkipCounts", typeOf[view.SkipCounts](), false},
	{"LocalTime", typeOf[view.LocalTime](), false},
	{"BroadcastEmailCounts", typeOf[view.BroadcastEmailCounts](), false},
	{"AuthMethods", typeOf[view.AuthMethods](), false},
	{"NotificationSetting", typeOf[view.NotificationSetting](), true},
	{"QuietHours", typeOf[view.QuietHours](), false},
	{"QuietHoursInput", typeOf[view.QuietHoursInput](), true},
	{"NotificationCategory", typeOf[view.NotificationCategory](), false},
}

// inlineAnswers are the answers whose data schema is written in the
// operation itself rather than as a component.
var inlineAnswers = []struct {
	method, path string
	status       int
	typ          reflect.Type
}{
	{http.MethodGet, "/api/v1/devices", http.StatusOK, typeOf[[]view.Device]()},
	{http.MethodGet, "/api/v1/push/vapid-public-key", http.StatusOK, typeOf[view.VAPIDPublicKey]()},
	{http.MethodGet, "/api/v1/notifications/categories", http.StatusOK, typeOf[[]view.NotificationCategory]()},
	{http.MethodGet, "/api/v1/api-keys", http.StatusOK, typeOf[[]view.APIKey]()},
	{http.MethodGet, "/api/v1/webhooks", http.StatusOK, typeOf[[]view.WebhookEndpoint]()},
	{http.MethodDelete, "/api/v1/webhooks/{id}", http.StatusOK, typeOf[view.WebhookDeleted]()},
	{http.MethodPost, "/api/v1/webhooks/{id}/events/{eventId}/redeliver", http.StatusAccepted, typeOf[view.EventQueued]()},
	{http.MethodPost, "/api/v1/webhooks/{id}/ping", http.StatusAccepted, typeOf[view.EventQueued]()},
	{http.MethodPost, "/api/v1/users/me/delete", http.StatusOK, typeOf[view.UserDeleted]()},
	{http.MethodGet, "/api/v1/users/me/sessions", http.StatusOK, typeOf[[]view.Session]()},
	{http.MethodDelete, "/api/v1/users/me/sessions/{id}", http.StatusOK, typeOf[view.SessionRevoked]()},
	{http.MethodPost, "/api/v1/users/me/messenger-link", http.StatusOK, typeOf[view.MessengerLink]()},
	{http.MethodDelete, "/api/v1/users/me/messenger-link", http.StatusOK, typeOf[view.MessengerUnlinked]()},
	{http.MethodDelete, "/api/v1/admin/users/{id}", http.StatusOK, typeOf[view.UserDeleted]()},
	{http.MethodDelete, "/api/v1/admin/users/{id}/sessions", http.StatusOK, typeOf[view.SessionsRevoked]()},
	{http.MethodDelete, "/api/v1/admin/bans/{ip}", http.StatusOK, typeOf[view.BanLifted]()},
}

// notViews are the component schemas no wire type of this package writes:
// building blocks of other schemas, and what the server serves itself.
// Requests (…Request), errors (…Error) and envelopes (…Envelope) are
// recognised by name.
var notViews = []string{
	"ErrorCode", "Email", "Password", "Code", "NotificationInput", "PushOptions", "Audience", "Platform", "PushToken",
	"Plan", "Scope", "WebhookEventType", "Timestamp", "JWKSet", "Degraded", "SubscriptionSource", "EntitlementState",
	"PublicKeyCredentialJSON",
}

// webhookData are the types of webhook events' data, which the OpenAPI
// document does not describe: docs/webhooks.md does, and internal/webhooks'
// catalogue test holds it to them.
var webhookData = []string{"MessengerBroadcastEvent", "NotificationJobEvent"}

// storeAnswers are the answers to the stores' notifications (App Store
// Server Notifications, Play's Pub/Sub push, Stripe's webhooks): the stores
// call those endpoints, not clients, so the document leaves them out and
// docs/billing.md describes them.
var storeAnswers = []string{"Received"}

func loadDocument(t *testing.T) *openapi3.T {
	t.Helper()
	doc, err := openapi3.NewLoader().LoadFromData(apidoc.YAML)
	if err != nil {
		t.Fatalf("apidoc/openapi.yaml: %v", err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("apidoc/openapi.yaml: %v", err)
	}
	return doc
}

// TestOpenAPIMatchesTypes holds apidoc/openapi.yaml's schemas to the wire
// types, both ways.
func TestOpenAPIMatchesTypes(t *testing.T) {
	doc := loadDocument(t)
	c := &checker{t: t, reached: map[string]bool{}}
	mapped := map[string]bool{}
	for _, m := range schemas {
		name, prop, _ := strings.Cut(m.name, ".")
		mapped[name] = true
		ref := doc.Components.Schemas[name]
		if ref == nil {
			t.Errorf("schema %s: not in apidoc/openapi.yaml's components", name)
			continue
		}
		s := ref.Value
		if prop != "" {
			if s.Properties[prop] == nil {
				t.Errorf("schema %s: has no property %s", name, prop)
				continue
			}
			s = s.Properties[prop].Value
		}
		c.value(m.name, s, m.typ, field{required: true}, m.input)
	}
	for _, a := range inlineAnswers {
		where := fmt.Sprintf("%s %s (%d) data", a.method, a.path, a.status)
		s, err := answerData(doc, a.method, a.path, a.status)
		if err != nil {
			t.Errorf("%s: %v", where, err)
			continue
		}
		c.value(where, s, a.typ, field{required: true}, false)
	}
	for name := range doc.Components.Schemas {
		if !mapped[name] && !slices.Contains(notViews, name) &&
			!strings.HasSuffix(name, "Error") && !strings.HasSuffix(name, "Request") && !strings.HasSuffix(name, "Envelope") {
			t.Errorf("schema %s: no wire type is named for it: add it to schemas in internal/view/openapi_test.go (or to notViews when no answer is written from a type)", name)
		}
	}
	for _, name := range viewTypes(t) {
		if !c.reached[name] && !slices.Contains(webhookData, name) && !slices.Contains(storeAnswers, name) {
			t.Errorf("view.%s: no schema of apidoc/openapi.yaml describes it: name its schema in schemas or inlineAnswers", name)
		}
	}
}

// answerData is the schema of the data of an operation's answer: the
// SuccessEnvelope's data property as the operation narrows it.
func answerData(doc *openapi3.T, method, path string, status int) (*openapi3.Schema, error) {
	item := doc.Paths.Value(path)
	if item == nil {
		return nil, fmt.Errorf("no such path")
	}
	op := item.GetOperation(method)
	if op == nil {
		return nil, fmt.Errorf("no such operation")
	}
	resp := op.Responses.Status(status)
	if resp == nil || resp.Value == nil || resp.Value.Content.Get("application/json") == nil {
		return nil, fmt.Errorf("no JSON answer with status %d", status)
	}
	s := resp.Value.Content.Get("application/json").Schema.Value
	for _, part := range append(openapi3.SchemaRefs{{Value: s}}, s.AllOf...) {
		if d := part.Value.Properties["data"]; d != nil {
			return d.Value, nil
		}
	}
	return nil, fmt.Errorf("the answer has no data property")
}

// field is what a struct field's JSON tag and its schema's object say of a
// property.
type field struct {
	omitempty bool // the field is left out when empty
	required  bool // the schema requires the property
}

type checker struct {
	t *testing.T
	// reached are the names of this package's types compared to a schema.
	reached map[string]bool
}

// value compares the schema s of the value at where to typ.
func (c *checker) value(where string, s *openapi3.Schema, typ reflect.Type, f field, input bool) {
	base, nullable := nonNull(s)
	if typ.Kind() == reflect.Pointer {
		typ = typ.Elem()
		switch {
		case input:
		case f.omitempty && f.required:
			c.t.Errorf("%s: the field is left out when nil (omitempty), so the schema must not require it", where)
		case !f.omitempty && !nullable:
			c.t.Errorf("%s: the field is null when nil, so the schema must allow null (type [..., 'null'] or oneOf with {type: 'null'})", where)
		}
	} else if !input {
		canBeNull := typ.Kind() == reflect.Slice || typ.Kind() == reflect.Map || typ.Kind() == reflect.Interface
		if nullable && !canBeNull {
			c.t.Errorf("%s: the schema allows null, but the field (%s) is never null: make it a pointer, or the schema not nullable", where, typ)
		}
		if !f.omitempty && !f.required {
			c.t.Errorf("%s: the field is always written, so the schema should require it (or the field be omitempty)", where)
		}
	}
	if typ.PkgPath() == reflect.TypeFor[view.User]().PkgPath() {
		name, _, _ := strings.Cut(typ.Name(), "[")
		c.reached[name] = true
	}
	want := openAPIType(typ)
	if want == "" { // any value
		return
	}
	variants := objectVariants(base)
	got := schemaType(base)
	if got != "" && got != want && !(got == "number" && want == "integer") {
		c.t.Errorf("%s: the schema's type is %s, but the field is %s (%s)", where, got, typ, want)
		return
	}
	switch want {
	case "array":
		if base.Items == nil {
			c.t.Errorf("%s: an array without items", where)
			return
		}
		c.value(where+"[]", base.Items.Value, typ.Elem(), field{required: true}, input)
	case "object":
		if typ.Kind() == reflect.Struct {
			c.object(where, variants, typ, input)
		}
	case "string":
		if typ == reflect.TypeFor[time.Time]() && base.Format != "date-time" {
			c.t.Errorf("%s: a time, but the schema's format is %q, not date-time", where, base.Format)
		}
	}
}

// object compares the properties of an object schema's variants (one,
// or each of a oneOf) with the fields of struct typ.
func (c *checker) object(where string, variants []*openapi3.Schema, typ reflect.Type, input bool) {
	fields := jsonFields(typ)
	props := map[string]bool{}
	for _, v := range variants {
		for p := range v.Properties {
			props[p] = true
		}
	}
	for _, p := range sortedKeys(props) {
		if _, ok := fields[p]; !ok {
			c.t.Errorf("%s: property %s has no field in %s (no field with json:%q)", where, p, typ, p)
		}
	}
	for _, name := range sortedKeys(fields) {
		sf := fields[name]
		if !props[name] {
			c.t.Errorf("%s: field %s.%s (json %q) is not a property of the schema", where, typ, sf.Name, name)
			continue
		}
		// Of a oneOf, a property is required when every variant requires
		// it: a field one variant leaves out may be left out.
		f := field{omitempty: hasOption(sf.Tag.Get("json"), "omitempty"), required: true}
		for _, v := range variants {
			f.required = f.required && slices.Contains(v.Required, name)
		}
		for _, v := range variants {
			if p := v.Properties[name]; p != nil {
				c.value(where+"."+name, p.Value, sf.Type, f, input)
			}
		}
	}
}

// nonNull is s without null, and whether s admits null.
func nonNull(s *openapi3.Schema) (*openapi3.Schema, bool) {
	if s.Nullable || (s.Type != nil && s.Type.IncludesNull()) {
		return s, true
	}
	var rest openapi3.SchemaRefs
	null := false
	for _, v := range s.OneOf {
		if v.Value.Type != nil && v.Value.Type.Is("null") {
			null = true
		} else {
			rest = append(rest, v)
		}
	}
	if null && len(rest) == 1 {
		return rest[0].Value, true
	}
	if null {
		out := *s
		out.OneOf = rest
		return &out, true
	}
	return s, false
}

// objectVariants are the schemas of an object's shapes: each of a oneOf,
// or s itself with its allOf parts' properties.
func objectVariants(s *openapi3.Schema) []*openapi3.Schema {
	if len(s.OneOf) > 0 {
		var out []*openapi3.Schema
		for _, v := range s.OneOf {
			out = append(out, objectVariants(v.Value)...)
		}
		return out
	}
	if len(s.AllOf) == 0 {
		return []*openapi3.Schema{s}
	}
	merged := *s
	merged.Properties = openapi3.Schemas{}
	merged.Required = slices.Clone(s.Required)
	for p, v := range s.Properties {
		merged.Properties[p] = v
	}
	for _, part := range s.AllOf {
		for _, v := range objectVariants(part.Value) {
			for p, ps := range v.Properties {
				merged.Properties[p] = ps
			}
			merged.Required = append(merged.Required, v.Required...)
		}
	}
	return []*openapi3.Schema{&merged}
}

// schemaType is the JSON type s describes besides null: its type, or what
// its const, its properties or its variants say; "" when it says none.
func schemaType(s *openapi3.Schema) string {
	if s.Type != nil {
		for _, t := range s.Type.Slice() {
			if t != "null" {
				return t
			}
		}
	}
	switch v := s.Const.(type) {
	case bool:
		return "boolean"
	case string:
		return "string"
	case float64, int:
		return "number"
	case nil:
	default:
		return fmt.Sprintf("%T", v)
	}
	if len(s.Properties) > 0 {
		return "object"
	}
	var types []string
	for _, v := range append(slices.Clone(s.OneOf), s.AllOf...) {
		if t := schemaType(v.Value); t != "" && !slices.Contains(types, t) {
			types = append(types, t)
		}
	}
	if len(types) == 1 {
		return types[0]
	}
	return ""
}

// openAPIType is the JSON type encoding/json writes a value of typ as; ""
// for any.
func openAPIType(typ reflect.Type) string {
	if typ == reflect.TypeFor[time.Time]() {
		return "string"
	}
	switch typ.Kind() {
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "integer"
	case reflect.Float32, reflect.Float64:
		return "number"
	case reflect.Slice, reflect.Array:
		return "array"
	case reflect.Struct, reflect.Map:
		return "object"
	case reflect.Pointer:
		return openAPIType(typ.Elem())
	}
	return ""
}

// jsonFields are the fields encoding/json writes of struct typ, by JSON
// name: embedded structs' fields promoted, json:"-" and unexported ones
// left out.
func jsonFields(typ reflect.Type) map[string]reflect.StructField {
	out := map[string]reflect.StructField{}
	for _, f := range reflect.VisibleFields(typ) {
		tag := f.Tag.Get("json")
		if !f.IsExported() || tag == "-" || (f.Anonymous && tag == "") {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if name == "" {
			name = f.Name
		}
		out[name] = f
	}
	return out
}

func hasOption(tag, option string) bool {
	_, opts, _ := strings.Cut(tag, ",")
	return slices.Contains(strings.Split(opts, ","), option)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// viewTypes are the exported struct types declared in this package.
func viewTypes(t *testing.T) []string {
	t.Helper()
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), e.Name(), nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.TYPE {
				continue
			}
			for _, spec := range g.Specs {
				ts := spec.(*ast.TypeSpec)
				if _, isStruct := ts.Type.(*ast.StructType); isStruct && ts.Name.IsExported() {
					names = append(names, ts.Name.Name)
				}
			}
		}
	}
	sort.Strings(names)
	return names
}
