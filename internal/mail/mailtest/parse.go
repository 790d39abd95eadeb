package mailtest

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"maps"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	"net/mail"
	"slices"
	"strings"
)

// maxDepth bounds multipart nesting when parsing.
const maxDepth = 8

// parseMessage decodes raw into a Received (without envelope fields). Parse
// problems are reported in ParseErr; Raw is always set.
func parseMessage(raw []byte) Received {
	rec := Received{Raw: raw}
	msg, err := mail.ReadMessage(bytes.NewReader(raw))
	if err != nil {
		rec.ParseErr = fmt.Errorf("reading message: %w", err)
		return rec
	}
	rec.Header = msg.Header
	var dec mime.WordDecoder
	subject := msg.Header.Get("Subject")
	if s, err := dec.DecodeHeader(subject); err == nil {
		rec.Subject = s
	} else {
		rec.Subject = subject
		rec.ParseErr = fmt.Errorf("decoding subject: %w", err)
	}
	if err := walkPart(&rec, header(msg.Header), msg.Body, 0); err != nil {
		rec.ParseErr = errors.Join(rec.ParseErr, err)
	}
	return rec
}

// header is a MIME header: mail.Header or textproto.MIMEHeader.
type header map[string][]string

func (h header) get(key string) string {
	return mail.Header(h).Get(key)
}

// walkPart fills rec.Text / rec.HTML with the first text/plain and text/html
// leaf parts found, depth first.
func walkPart(rec *Received, h header, body io.Reader, depth int) error {
	if depth > maxDepth {
		return errors.New("multipart nesting too deep")
	}
	ct := h.get("Content-Type")
	if ct == "" {
		ct = "text/plain; charset=us-ascii"
	}
	mediaType, params, err := mime.ParseMediaType(ct)
	if err != nil {
		return fmt.Errorf("content-type %q: %w", ct, err)
	}
	if strings.HasPrefix(mediaType, "multipart/") {
		boundary := params["boundary"]
		if boundary == "" {
			return fmt.Errorf("%s without boundary", mediaType)
		}
		mr := multipart.NewReader(body, boundary)
		for {
			// NextRawPart: we decode Content-Transfer-Encoding ourselves.
			p, err := mr.NextRawPart()
			if errors.Is(err, io.EOF) {
				return nil
			}
			if err != nil {
				return fmt.Errorf("reading %s: %w", mediaType, err)
			}
			if err := walkPart(rec, header(p.Header), p, depth+1); err != nil {
				return err
			}
		}
	}
	if mediaType != "text/plain" && mediaType != "text/html" {
		return nil // attachments and the like are ignored
	}
	if cs := strings.ToLower(params["charset"]); cs != "" && cs != "utf-8" && cs != "us-ascii" {
		return fmt.Errorf("unsupported charset %q", cs)
	}
	var r io.Reader = body
	switch enc := strings.ToLower(strings.TrimSpace(h.get("Content-Transfer-Encoding"))); enc {
	case "", "7bit", "8bit", "binary":
	case "quoted-printable":
		r = quotedprintable.NewReader(body)
	case "base64":
		r = base64.NewDecoder(base64.StdEncoding, &stripNewlines{r: body})
	default:
		return fmt.Errorf("unsupported Content-Transfer-Encoding %q", enc)
	}
	b, err := io.ReadAll(r)
	if err != nil {
		return fmt.Errorf("decoding %s part: %w", mediaType, err)
	}
	text := strings.ReplaceAll(string(b), "\r\n", "\n")
	switch {
	case mediaType == "text/plain" && rec.Text == "":
		rec.Text = text
	case mediaType == "text/html" && rec.HTML == "":
		rec.HTML = text
	}
	return nil
}

// stripNewlines drops CR and LF, which base64 bodies contain every 76 chars.
type stripNewlines struct{ r io.Reader }

func (s *stripNewlines) Read(p []byte) (int, error) {
	for {
		n, err := s.r.Read(p)
		j := 0
		for _, c := range p[:n] {
			if c != '\r' && c != '\n' {
				p[j] = c
				j++
			}
		}
		if j > 0 || err != nil {
			return j, err
		}
	}
}

func (r Received) clone() Received {
	c := r
	c.To = slices.Clone(r.To)
	c.Raw = bytes.Clone(r.Raw)
	if r.Header != nil {
		c.Header = make(mail.Header, len(r.Header))
		for k, v := range maps.All(r.Header) {
			c.Header[k] = slices.Clone(v)
		}
	}
	return c
}

// ExtractCode returns the first line of text that, trimmed of surrounding
// white space, is exactly six ASCII digits (a login code).
func ExtractCode(text string) (string, bool) {
	for line := range strings.Lines(text) {
		line = strings.TrimSpace(line)
		if len(line) != 6 {
			continue
		}
		ok := true
		for i := range len(line) {
			if line[i] < '0' || line[i] > '9' {
				ok = false
				break
			}
		}
		if ok {
			return line, true
		}
	}
	return "", false
}
