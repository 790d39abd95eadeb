package clients

import "testing"

// TestGraphQLAudits runs graphql-http's server audits against Herald: every
// audit passes but the application/json warnings graphql_audits.mjs lists
// (the contract's statuses).
func TestGraphQLAudits(t *testing.T) {
	needNode(t)
	s := startServer(t, nil)
	t.Log(runNode(t, s, "graphql_audits.mjs", nil))
}

// TestIntrospection runs graphql-js's introspection query against Herald:
// the schema it builds prints as schema.graphqls (with the descriptions
// Herald writes from @auth), and deeper or repeated introspection is
// refused; switched off, introspection is refused.
func TestIntrospection(t *testing.T) {
	needNode(t)
	t.Run("on", func(t *testing.T) {
		s := startServer(t, nil)
		t.Log(runNode(t, s, "introspection.mjs", nil))
	})
	t.Run("off", func(t *testing.T) {
		s := startServer(t, map[string]string{"HERALD_GRAPHQL_INTROSPECTION": "off"})
		t.Log(runNode(t, s, "introspection.mjs", map[string]string{"HERALD_INTROSPECTION": "off"}))
	})
}
