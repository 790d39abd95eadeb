package main

import (
	"net/http"
	"reflect"
	"testing"
)

// A door is one of the two API styles. Tests that must hold through both
// run once per door; the door checks the style's own envelope on every
// answer, so each call also asserts the response shape.
type door struct {
	name string
	// emailExists is the code a duplicate signup gets through this door.
	emailExists string
	call        func(t testing.TB, h *herald, op string, args map[string]any) result
}

// result is an answer reduced to what both styles share.
type result struct {
	status  int
	code    string         // the error code; "" on success
	message string         // the error message
	details map[string]any // REST error.details, GraphQL extensions (without code)
	data    any            // GraphQL data.<op>, REST data
	header  http.Header
}

// Operations, named as in the GraphQL schema.
const (
	opSignup = "signup"
	opVerify = "verifyEmail"
	opResend = "resendVerificationEmail"
)

func doors() []door { return []door{graphQLDoor, restDoor} }

var graphQLDocs = map[string]string{
	opSignup: `mutation Signup($email: String!, $password: String!, $referral: String) {
  signup(email: $email, password: $password, referral: $referral) { message success }
}`,
	opVerify: `mutation Verify($email: String!, $code: String!) { verifyEmail(email: $email, code: $code) }`,
	opResend: `mutation Resend($email: String!) { resendVerificationEmail(email: $email) }`,
}

var graphQLDoor = door{
	name:        "graphql",
	emailExists: "EMAIL_EXISTS",
	call: func(t testing.TB, h *herald, op string, args map[string]any) result {
		t.Helper()
		doc, ok := graphQLDocs[op]
		if !ok {
			t.Fatalf("unknown operation %q", op)
		}
		status, body, hdr := h.graphqlHeader(t, doc, args)
		r := result{status: status, header: hdr}
		errs, hasErrors := body["errors"]
		if !hasErrors {
			if status != http.StatusOK {
				t.Fatalf("%s: status %d without errors: %v", op, status, body)
			}
			data := jsonPath(body, "data", op)
			if data == nil {
				t.Fatalf("%s: no data.%s in %v", op, op, body)
			}
			r.data = data
			return r
		}
		list, ok := errs.([]any)
		if !ok || len(list) == 0 {
			t.Fatalf("%s: errors is not a non-empty array: %v", op, body)
		}
		e0, _ := list[0].(map[string]any)
		if d, present := body["data"]; !present || d != nil {
			t.Fatalf("%s: error answer must have data: null, got %v", op, body)
		}
		if !reflect.DeepEqual(e0["path"], []any{op}) {
			t.Fatalf("%s: errors[0].path = %v, want [%s]", op, e0["path"], op)
		}
		r.message, _ = e0["message"].(string)
		if r.message == "" {
			t.Fatalf("%s: errors[0].message is empty: %v", op, e0)
		}
		ext, _ := e0["extensions"].(map[string]any)
		r.code, _ = ext["code"].(string)
		if r.code == "" {
			t.Fatalf("%s: errors[0].extensions.code missing: %v", op, e0)
		}
		r.details = map[string]any{}
		for k, v := range ext {
			if k != "code" {
				r.details[k] = v
			}
		}
		return r
	},
}

var restPaths = map[string]string{
	opSignup: "/api/v1/auth/register",
	opVerify: "/api/v1/auth/verify",
	opResend: "/api/v1/auth/resend-verification",
}

var restDoor = door{
	name:        "rest",
	emailExists: "EMAIL_ALREADY_EXISTS",
	call: func(t testing.TB, h *herald, op string, args map[string]any) result {
		t.Helper()
		path, ok := restPaths[op]
		if !ok {
			t.Fatalf("unknown operation %q", op)
		}
		body := map[string]any{}
		for k, v := range args {
			if v != nil {
				body[k] = v
			}
		}
		status, env, hdr := h.rest(t, http.MethodPost, path, body)
		return envelopeResult(t, op, status, env, hdr)
	},
}

// envelopeResult checks the REST envelope's two shapes and reduces it.
func envelopeResult(t testing.TB, what string, status int, env map[string]any, hdr http.Header) result {
	t.Helper()
	r := result{status: status, header: hdr}
	if env["success"] == true {
		if _, has := env["error"]; has {
			t.Fatalf("%s: success envelope with an error: %v", what, env)
		}
		if _, has := env["data"]; !has {
			t.Fatalf("%s: success envelope without data: %v", what, env)
		}
		if status >= 400 {
			t.Fatalf("%s: success envelope with status %d", what, status)
		}
		r.data = env["data"]
		return r
	}
	if _, has := env["data"]; has {
		t.Fatalf("%s: error envelope with data: %v", what, env)
	}
	e, _ := env["error"].(map[string]any)
	r.code, _ = e["code"].(string)
	r.message, _ = e["message"].(string)
	if r.code == "" || r.message == "" {
		t.Fatalf("%s: error envelope without code or message: %v", what, env)
	}
	if d, has := e["details"]; has {
		details, ok := d.(map[string]any)
		r.details = details
		if !ok {
			t.Fatalf("%s: error.details is not an object: %v", what, env)
		}
	}
	return r
}

// expectOK fails unless r is a success with the given status.
func expectOK(t testing.TB, what string, r result, status int) {
	t.Helper()
	if r.code != "" || r.status != status {
		t.Fatalf("%s: got status %d code %q (%s) details %v, want success %d", what, r.status, r.code, r.message, r.details, status)
	}
}

// expectError fails unless r is the error code with the status.
func expectError(t testing.TB, what string, r result, status int, code string) {
	t.Helper()
	if r.status != status || r.code != code {
		t.Fatalf("%s: got status %d code %q (%s) details %v, want %d %s", what, r.status, r.code, r.message, r.details, status, code)
	}
}
