package devices

import (
	"reflect"
	"testing"
)

// TestPlanImport holds the rules of one import batch, without a database:
// later lines win a token, a token of the same account refreshes its
// device, a token of another account moves to a new device.
func TestPlanImport(t *testing.T) {
	accountOf := map[string]string{"a1@example.com": "a1", "a2@example.com": "a2"}
	held := map[string]TokenHolder{"held-by-a1": {DeviceID: "old1", AccountID: "a1"}, "held-by-a2": {DeviceID: "old2", AccountID: "a2"}}
	cases := []struct {
		name string
		rows []importRow
		plan importPlan
		res  batchResult
	}{
		{
			name: "mixed batch",
			rows: []importRow{
				{Line: 1, ID: "n1", Email: "a1@example.com", Platform: "ios", PushToken: "fresh", NewName: "iOS device"},
				{Line: 2, ID: "n2", Email: "a1@example.com", Platform: "android", PushToken: "held-by-a1", NewName: "Android device"},       // refreshes old1, keeps its name
				{Line: 3, ID: "n3", Email: "a1@example.com", Platform: "android", PushToken: "held-by-a2", Name: "Moved", NewName: "Moved"}, // moves from a2
				{Line: 4, ID: "n4", Email: "ghost@example.com", Platform: "android", PushToken: "ghost", NewName: "x"},
				{Line: 5, ID: "n5", Email: "a2@example.com", Platform: "android", PushToken: "fresh", NewName: "Took it"}, // moves from n1 in the same batch
				{Line: 6, ID: "n6", Email: "a2@example.com", Platform: "android", PushToken: "fresh", Name: "Renamed", NewName: "Renamed"},
			},
			plan: importPlan{
				drop: []string{"old2"},
				put: []ImportedDevice{
					{ID: "n1", AccountID: "a1", Platform: "ios", Name: "iOS device"},
					{ID: "old1", AccountID: "a1", Platform: "android", PushToken: "held-by-a1"},
					{ID: "n3", AccountID: "a1", Platform: "android", Name: "Moved", PushToken: "held-by-a2"},
					{ID: "n5", AccountID: "a2", Platform: "android", Name: "Renamed", PushToken: "fresh"},
				},
			},
			res: batchResult{imported: 3, updated: 2, rejected: []LineError{{Line: 4, Reason: "no account has the email ghost@example.com"}}},
		},
		{
			name: "a refreshed device loses its token later in the batch",
			rows: []importRow{
				{Line: 1, ID: "n1", Email: "a1@example.com", Platform: "ios", PushToken: "held-by-a1", Name: "Pad", NewName: "Pad"},
				{Line: 2, ID: "n2", Email: "a2@example.com", Platform: "android", PushToken: "held-by-a1", NewName: "Android device"},
			},
			plan: importPlan{
				drop: []string{"old1"},
				put: []ImportedDevice{
					{ID: "old1", AccountID: "a1", Platform: "ios", Name: "Pad"},
					{ID: "n2", AccountID: "a2", Platform: "android", Name: "Android device", PushToken: "held-by-a1"},
				},
			},
			res: batchResult{imported: 1, updated: 1},
		},
		{
			name: "only unknown emails",
			rows: []importRow{{Line: 7, ID: "n7", Email: "ghost@example.com", Platform: "ios", PushToken: "t", NewName: "x"}},
			plan: importPlan{put: []ImportedDevice{}},
			res:  batchResult{rejected: []LineError{{Line: 7, Reason: "no account has the email ghost@example.com"}}},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			plan, res := planImport(c.rows, accountOf, held)
			if !reflect.DeepEqual(plan, c.plan) {
				t.Errorf("plan\n%+v, want\n%+v", plan, c.plan)
			}
			if !reflect.DeepEqual(res, c.res) {
				t.Errorf("result %+v, want %+v", res, c.res)
			}
		})
	}
}
