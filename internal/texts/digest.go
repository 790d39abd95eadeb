package texts

import (
	"strconv"
	"strings"
)

// digestTexts are a digest's title and, when more were folded in than it
// names, the tail of its body, in each notice language, with {n} (how
// many sends) and {more} (how many it does not name).
var digestTexts = map[string][2]string{
	"en": {"{n} new notifications", "and {more} more"},
	"de": {"{n} neue Benachrichtigungen", "und {more} weitere"},
}

// DigestNamed is how many subjects a digest's body names, newest first.
const DigestNamed = 3

// Digest words a digest of count sends (count ≥ 2) whose latest subjects
// are subjects, newest first: a title saying how many, and a body naming
// up to DigestNamed subjects, one a line, and how many more there were.
func Digest(locale string, count int, subjects []string) (title, body string) {
	t := digestTexts[noticeLocale(locale)]
	named := subjects[:min(len(subjects), DigestNamed)]
	lines := append([]string(nil), named...)
	if more := count - len(named); more > 0 {
		lines = append(lines, strings.ReplaceAll(t[1], "{more}", strconv.Itoa(more)))
	}
	return strings.ReplaceAll(t[0], "{n}", strconv.Itoa(count)), strings.Join(lines, "\n")
}
