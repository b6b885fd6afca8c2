package config

import (
	"fmt"
	"strings"
)

// Reference renders every setting as a Markdown table: the config reference
// in docs/config.md, kept current by a test.
func Reference(quickstart Config) string {
	var b strings.Builder
	b.WriteString("| setting | flag | type | quickstart | meaning |\n|---|---|---|---|---|\n")
	for _, f := range quickstart.Fields() {
		short := ""
		if f.Short != "" {
			short = "`--" + f.Short + "`"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | `%s` | %s |\n", f.Path, short, f.Type, f.String(), strings.ReplaceAll(f.Help, "|", "\\|"))
	}
	return b.String()
}
