package sqlstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/preferences"
	"github.com/herald-vpn/herald/internal/sqlstore"
	"github.com/herald-vpn/herald/internal/testsupport"
)

func TestUnsubscribeLinksConformance(t *testing.T) {
	runConformance(t, []storeCase{{"SingleUse", testUnsubscribeLinkUses}}, mustOpen)
}

// An unsubscribe token's first use is recorded and a second answers
// false, also when both race; a refused use leaves the preference as it
// was; housekeeping deletes the uses older than the links' lifetime.
func testUnsubscribeLinkUses(t *testing.T, db *sqlstore.DB, clk *testsupport.Clock) {
	ctx := context.Background()
	mustAccount(t, db, "u1")
	cat, _ := preferences.NewCatalogue(nil)
	svc := preferences.NewService(db, cat)
	links := preferences.UnsubscribeLinks{Key: []byte("0123456789abcdef"), Now: clk.Now}
	svc.SetUnsubscribeLinks(links)
	tok := links.Sign("u1", "product", preferences.ChannelEmail)

	results := make(chan error, 4)
	for range 4 {
		go func() { _, err := svc.Unsubscribe(ctx, tok); results <- err }()
	}
	ok := 0
	for range 4 {
		if err := <-results; err == nil {
			ok++
		}
	}
	if ok != 1 {
		t.Fatalf("%d of 4 concurrent uses of one link passed, want 1", ok)
	}
	stored, err := db.NotificationSettings(ctx, "u1")
	if err != nil || cat.Allows(stored, "product", "email") {
		t.Fatalf("after the link: %v, %v; want product email off", stored, err)
	}

	clk.Advance(preferences.UnsubscribeTTL + time.Hour)
	second := links.Sign("u1", "service", preferences.ChannelEmail)
	if _, err := svc.Unsubscribe(ctx, second); err != nil {
		t.Fatal(err)
	}
	n, err := db.DeleteUnsubscribeLinkUses(ctx, clk.Now().Add(-preferences.UnsubscribeTTL))
	if err != nil || n != 1 {
		t.Fatalf("pruned %d, %v; want the first link's use only", n, err)
	}
	if _, err := svc.Unsubscribe(ctx, second); err == nil {
		t.Fatal("the second link, still recorded, passed again")
	}
}
