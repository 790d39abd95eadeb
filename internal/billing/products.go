package billing

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/herald-vpn/herald/internal/subscriptions"
)

// ParseProducts reads the operator's product map (HERALD_BILLING_PRODUCTS
// names its file): a JSON object of stores, each an object of product id
// to plan, as
//
//	{"app_store": {"com.example.vpn.premium.monthly": "premium"},
//	 "google_play": {"premium_monthly": "premium"},
//	 "stripe": {"price_1Pxyz": "basic"}}
//
// A store other than app_store, google_play and stripe, a plan not in
// plans, an empty product id or an unknown field is an error.
func ParseProducts(data []byte, plans []string) (Products, error) {
	var raw map[string]map[string]string
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&raw); err != nil {
		return nil, fmt.Errorf("billing products: %w", err)
	}
	if dec.More() {
		return nil, fmt.Errorf("billing products: more than one JSON value")
	}
	out := Products{}
	for store, products := range raw {
		src := subscriptions.Source(store)
		if !src.Store() {
			return nil, fmt.Errorf("billing products: %q is not a store (app_store, google_play, stripe)", store)
		}
		m := map[string]string{}
		for product, plan := range products {
			if strings.TrimSpace(product) == "" {
				return nil, fmt.Errorf("billing products: %s has an empty product id", store)
			}
			if !slices.Contains(plans, plan) {
				return nil, fmt.Errorf("billing products: %s product %q maps to %q, not a plan (%s)", store, product, plan, strings.Join(plans, ", "))
			}
			m[product] = plan
		}
		out[src] = m
	}
	return out, nil
}
