package devices

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/herald-vpn/herald/internal/accounts"
	"github.com/herald-vpn/herald/internal/apperr"
)

// MaxImportLineLen bounds one line of an import file.
const MaxImportLineLen = 64 << 10

// LineError says why one line of an import file was rejected.
type LineError struct {
	Line   int // 1-based
	Reason string
}

// ImportResult is what an import did.
type ImportResult struct {
	Imported int // devices created
	Updated  int // devices that already had the token for the same account
	Rejected int // lines refused, each with a LineError unless ErrorsTruncated
	// Errors lists rejected lines in file order, at most
	// Config.MaxImportErrors of them.
	Errors          []LineError
	ErrorsTruncated bool
}

// importLine is one line of the file. Unknown fields are ignored so that
// exports of older systems with extra columns import as they are.
type importLine struct {
	Email     *string `json:"email"`
	Platform  *string `json:"platform"`
	PushToken *string `json:"pushToken"`
	Name      *string `json:"name"`
}

// Import reads JSON Lines {"email","platform","pushToken","name"?} from r
// and registers the devices for existing accounts, without plan limits (an
// operator's migration from an older system). Blank lines are skipped.
// Lines are applied in batches of Config.ImportBatchSize, each in one
// transaction; progress, when not nil, is called after each batch with the
// number of lines read so far. A line that cannot be used is rejected with
// its line number and the import goes on; an error is returned only when
// reading r or the database fails, with the result of the batches already
// committed.
func (s *Service) Import(ctx context.Context, r io.Reader, progress func(done int)) (ImportResult, error) {
	var res ImportResult
	br := bufio.NewReaderSize(r, 256<<10)
	batch := make([]importRow, 0, s.cfg.ImportBatchSize)
	lineNo := 0
	// Lines refused while reading wait for the store's refusals of the
	// same batch, so that Errors is in file order.
	var refused []LineError
	flush := func() error {
		if len(batch) > 0 {
			b, err := s.importBatch(ctx, batch)
			if err != nil {
				return fmt.Errorf("import lines %d-%d: %w", batch[0].Line, batch[len(batch)-1].Line, err)
			}
			res.Imported += b.imported
			res.Updated += b.updated
			refused = append(refused, b.rejected...)
			batch = batch[:0]
		}
		slices.SortStableFunc(refused, func(a, b LineError) int { return cmp.Compare(a.Line, b.Line) })
		for _, e := range refused {
			s.reject(&res, e.Line, e.Reason)
		}
		refused = refused[:0]
		if progress != nil {
			progress(lineNo)
		}
		return nil
	}
	// refuse rejects the current line; a full buffer of refusals is
	// flushed, which bounds memory for a file of bad lines.
	refuse := func(reason string) error {
		refused = append(refused, LineError{Line: lineNo, Reason: reason})
		if len(refused) >= s.cfg.ImportBatchSize {
			return flush()
		}
		return nil
	}
	var long []byte
	for {
		chunk, isPrefix, err := br.ReadLine()
		if err == io.EOF {
			break
		}
		if err != nil {
			return res, fmt.Errorf("read line %d: %w", lineNo+1, err)
		}
		if isPrefix || long != nil {
			// A line longer than the reader's buffer: gather it up to the
			// cap, then judge it.
			if len(long) <= MaxImportLineLen {
				long = append(long, chunk...)
			}
			if isPrefix {
				continue
			}
			chunk, long = long, nil
		}
		lineNo++
		if len(bytes.TrimSpace(chunk)) == 0 {
			continue
		}
		if len(chunk) > MaxImportLineLen {
			if err := refuse(fmt.Sprintf("line longer than %d bytes", MaxImportLineLen)); err != nil {
				return res, err
			}
			continue
		}
		row, reason := s.parseLine(chunk)
		if reason != "" {
			if err := refuse(reason); err != nil {
				return res, err
			}
			continue
		}
		row.Line = lineNo
		id, err := newID()
		if err != nil {
			return res, err
		}
		row.ID = id
		batch = append(batch, row)
		if len(batch) == cap(batch) {
			if err := flush(); err != nil {
				return res, err
			}
		}
		if err := ctx.Err(); err != nil {
			return res, err
		}
	}
	return res, flush()
}

// importRow is one accepted line of an import file, its email already
// normalized and its device ID already chosen.
type importRow struct {
	Line      int
	ID        string // used when the row creates a device
	Email     string
	Platform  string
	PushToken string
	Name      string // "" keeps an existing device's name
	NewName   string // the name of a device this row creates
}

// batchResult is what one batch of an import did.
type batchResult struct {
	imported int // devices created
	updated  int // existing devices of the same account refreshed
	rejected []LineError
}

// importBatch applies one batch in one transaction: the store resolves the
// emails and finds the devices holding the tokens, planImport decides, and
// the store writes the plan. Plan limits do not apply.
func (s *Service) importBatch(ctx context.Context, rows []importRow) (batchResult, error) {
	var res batchResult
	err := s.store.InImportTx(ctx, func(tx ImportTx) error {
		emails := make([]string, 0, len(rows))
		seen := make(map[string]bool, len(rows))
		for _, r := range rows {
			if !seen[r.Email] {
				seen[r.Email] = true
				emails = append(emails, r.Email)
			}
		}
		accountOf, err := tx.AccountIDsByEmail(ctx, emails)
		if err != nil {
			return err
		}
		tokens := make([]string, 0, len(rows))
		for _, r := range rows {
			if _, ok := accountOf[r.Email]; ok {
				tokens = append(tokens, r.PushToken)
			}
		}
		held, err := tx.TokenHolders(ctx, tokens)
		if err != nil {
			return err
		}
		var plan importPlan
		plan, res = planImport(rows, accountOf, held)
		if err := tx.DropTokens(ctx, plan.drop); err != nil {
			return err
		}
		return tx.PutDevices(ctx, plan.put)
	})
	return res, err
}

// importPlan is what one batch writes.
type importPlan struct {
	drop []string         // existing devices that lose their token
	put  []ImportedDevice // devices created or refreshed
}

// planImport decides one batch, line by line so that later lines win: an
// unknown email is rejected; a token already held by a device of the same
// account (in the database or earlier in the batch) refreshes that device;
// a token held by another account's device moves to a new device.
func planImport(rows []importRow, accountOf map[string]string, held map[string]TokenHolder) (importPlan, batchResult) {
	var res batchResult
	plan := importPlan{put: make([]ImportedDevice, 0, len(rows))}
	type written struct {
		at      int // index in plan.put
		created bool
	}
	owner := make(map[string]written, len(rows)) // token → the device written with it
	for _, r := range rows {
		acct, ok := accountOf[r.Email]
		if !ok {
			res.rejected = append(res.rejected, LineError{Line: r.Line, Reason: "no account has the email " + r.Email})
			continue
		}
		if w, ok := owner[r.PushToken]; ok {
			d := &plan.put[w.at]
			if d.AccountID == acct {
				d.Platform = r.Platform
				if r.Name != "" {
					d.Name = r.Name
				}
				res.updated++
				continue
			}
			d.PushToken = ""
			if !w.created {
				plan.drop = append(plan.drop, d.ID)
			}
		} else if h, ok := held[r.PushToken]; ok {
			if h.AccountID == acct {
				owner[r.PushToken] = written{at: len(plan.put)}
				plan.put = append(plan.put, ImportedDevice{ID: h.DeviceID, AccountID: acct, Platform: r.Platform, Name: r.Name, PushToken: r.PushToken})
				res.updated++
				continue
			}
			plan.drop = append(plan.drop, h.DeviceID)
		}
		owner[r.PushToken] = written{at: len(plan.put), created: true}
		plan.put = append(plan.put, ImportedDevice{ID: r.ID, AccountID: acct, Platform: r.Platform, Name: r.NewName, PushToken: r.PushToken})
		res.imported++
	}
	return plan, res
}

func (s *Service) reject(res *ImportResult, line int, reason string) {
	res.Rejected++
	if len(res.Errors) < s.cfg.MaxImportErrors {
		res.Errors = append(res.Errors, LineError{Line: line, Reason: reason})
	} else {
		res.ErrorsTruncated = true
	}
}

// parseLine checks one line; a non-empty reason rejects it.
func (s *Service) parseLine(b []byte) (importRow, string) {
	var l importLine
	if err := json.Unmarshal(b, &l); err != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) && typeErr.Field != "" {
			return importRow{}, fmt.Sprintf("%s must be a string", typeErr.Field)
		}
		return importRow{}, "not a JSON object"
	}
	if l.Email == nil || *l.Email == "" {
		return importRow{}, "email is required"
	}
	email, err := accounts.NormalizeEmail(*l.Email)
	if err != nil {
		return importRow{}, fmt.Sprintf("email %q is not a valid address", *l.Email)
	}
	if l.Platform == nil {
		return importRow{}, "platform is required"
	}
	if ValidatePlatform(*l.Platform) != nil {
		return importRow{}, fmt.Sprintf("platform must be android, ios, web or huawei, not %q", *l.Platform)
	}
	if l.PushToken == nil || strings.TrimSpace(*l.PushToken) == "" {
		return importRow{}, "pushToken is required"
	}
	token, err := s.cfg.Tokens.Normalize(*l.Platform, *l.PushToken)
	if err != nil {
		return importRow{}, "pushToken: " + reasonOf(err)
	}
	var name string
	if l.Name != nil {
		if name, err = normalizeName(*l.Name); err != nil {
			return importRow{}, "name: " + reasonOf(err)
		}
	}
	return importRow{Email: email, Platform: *l.Platform, PushToken: token, Name: name, NewName: orDefaultName(name, *l.Platform)}, ""
}

func reasonOf(err error) string {
	if ae := apperr.As(err); ae.Details != nil {
		if c, ok := ae.Details["constraint"].(string); ok {
			return "expected " + c
		}
	}
	return err.Error()
}
