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
	batch := make([]ImportRow, 0, s.cfg.ImportBatchSize)
	lineNo := 0
	// Lines refused while reading wait for the store's refusals of the
	// same batch, so that Errors is in file order.
	var refused []LineError
	flush := func() error {
		if len(batch) > 0 {
			b, err := s.store.ImportDevices(ctx, batch)
			if err != nil {
				return fmt.Errorf("import lines %d-%d: %w", batch[0].Line, batch[len(batch)-1].Line, err)
			}
			res.Imported += b.Imported
			res.Updated += b.Updated
			refused = append(refused, b.Rejected...)
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

func (s *Service) reject(res *ImportResult, line int, reason string) {
	res.Rejected++
	if len(res.Errors) < s.cfg.MaxImportErrors {
		res.Errors = append(res.Errors, LineError{Line: line, Reason: reason})
	} else {
		res.ErrorsTruncated = true
	}
}

// parseLine checks one line; a non-empty reason rejects it.
func (s *Service) parseLine(b []byte) (ImportRow, string) {
	var l importLine
	if err := json.Unmarshal(b, &l); err != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) && typeErr.Field != "" {
			return ImportRow{}, fmt.Sprintf("%s must be a string", typeErr.Field)
		}
		return ImportRow{}, "not a JSON object"
	}
	if l.Email == nil || *l.Email == "" {
		return ImportRow{}, "email is required"
	}
	email, err := accounts.NormalizeEmail(*l.Email)
	if err != nil {
		return ImportRow{}, fmt.Sprintf("email %q is not a valid address", *l.Email)
	}
	if l.Platform == nil {
		return ImportRow{}, "platform is required"
	}
	if ValidatePlatform(*l.Platform) != nil {
		return ImportRow{}, fmt.Sprintf("platform must be android or ios, not %q", *l.Platform)
	}
	if l.PushToken == nil || strings.TrimSpace(*l.PushToken) == "" {
		return ImportRow{}, "pushToken is required"
	}
	token, err := normalizeToken(*l.PushToken)
	if err != nil {
		return ImportRow{}, "pushToken: " + reasonOf(err)
	}
	var name string
	if l.Name != nil {
		if name, err = normalizeName(*l.Name); err != nil {
			return ImportRow{}, "name: " + reasonOf(err)
		}
	}
	return ImportRow{Email: email, Platform: *l.Platform, PushToken: token, Name: name, NewName: orDefaultName(name, *l.Platform)}, ""
}

func reasonOf(err error) string {
	if ae := apperr.As(err); ae.Details != nil {
		if c, ok := ae.Details["constraint"].(string); ok {
			return "expected " + c
		}
	}
	return err.Error()
}
