package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"stoke/data"
	"stoke/trainer"
)

const predictUsage = `Usage: train predict --checkpoint RUN [--top 5] [--json] FILES...

The checkpoint's top classes for each image file, as ` + "`train eval`" + ` sees a val image
(the same decode, resize, centre crop and normalization). Flags may come anywhere
among the files; -- ends the flags (for a file named like one). A file that cannot
be read or decoded is reported on its own and the others are still predicted; the
exit status is 1 if any file failed.

Output, one line per file: FILE:  CLASS PROB%  CLASS PROB% ... A name that is not
printable UTF-8 (a newline, a byte that is not UTF-8) is shown Go-quoted ("a\nb.jpg").
With --json, one object per file: {"file", "top": [{"class", "prob"}]} or
{"file", "error"}; a file or class name that is not UTF-8 is shown Go-quoted in
"file" / "class" and given exactly, base64, in "file_base64" / "class_base64".

`

// predictCmd is `train predict`: a checkpoint's top classes for image files.
func predictCmd(args []string, stdout, stderr io.Writer) int {
	c := newSubcommand("predict", predictUsage, stderr)
	c.takesArgs = true // the image files
	from := c.String("checkpoint", "", "a run folder (its latest checkpoint; RUN/best for the best) or a checkpoint folder")
	k := c.Int("top", 5, "classes to show per image")
	asJSON := c.Bool("json", false, "one JSON object per image (see above)")
	if code, ok := c.parse(args); !ok {
		return code
	}
	if *from == "" || c.NArg() == 0 {
		return c.fail(2, "--checkpoint RUN and at least one image file are required")
	}
	if *k < 1 {
		return c.badValue("top", *k, "at least 1")
	}
	ctx, stop := interruptContext(stderr)
	defer stop()
	preds, err := trainer.Predict(ctx, *from, c.Args(), *k)
	failed := 0
	for _, p := range preds {
		if p.Err != nil {
			failed++
		}
		if *asJSON {
			b, _ := json.Marshal(predictionJSON(p))
			fmt.Fprintln(stdout, string(b))
			if p.Err != nil {
				fmt.Fprintf(stderr, "train predict: %s: %s\n", shownName(p.File), fileError(p))
			}
			continue
		}
		if p.Err != nil {
			fmt.Fprintf(stderr, "train predict: %s: %s\n", shownName(p.File), fileError(p))
			continue
		}
		fmt.Fprintf(stdout, "%s:", shownName(p.File))
		for _, c := range p.Classes {
			fmt.Fprintf(stdout, "  %s %.1f%%", shownName(c.Class), 100*c.Prob)
		}
		fmt.Fprintln(stdout)
	}
	switch {
	case err != nil && errors.Is(err, context.Canceled) && ctx.Err() != nil:
		return c.fail(130, "interrupted after %d of %d files", len(preds), c.NArg())
	case err != nil:
		return c.fail(1, "%v", err)
	case failed > 0:
		return c.fail(1, "%d of %d files could not be predicted (each is named above)", failed, len(preds))
	}
	return 0
}

// fileError is why p's file has no prediction, without the path that the
// line already names.
func fileError(p trainer.Prediction) string {
	var ie *data.ImageError
	if errors.As(p.Err, &ie) && ie.Path == p.File {
		return ie.Err.Error()
	}
	return strings.ReplaceAll(p.Err.Error(), p.File, "it")
}

// shownName is s as one line of text: itself when it is printable UTF-8,
// else Go-quoted (a newline as \n, a byte that is not UTF-8 as \xff), so
// that every name reads back to its bytes with strconv.Unquote. A name
// that begins with a quote is quoted too, so that a quoted name is never
// taken for a plain one.
func shownName(s string) string {
	if s != "" && utf8.ValidString(s) && !strings.HasPrefix(s, `"`) && strings.IndexFunc(s, func(r rune) bool { return !unicode.IsPrint(r) }) < 0 {
		return s
	}
	return strconv.Quote(s)
}

// jsonName is a name for JSON: itself when it is UTF-8 (encoding/json
// escapes what it must), else Go-quoted, with the exact bytes in base64
// beside it (encoding/json would replace each byte that is not UTF-8 by
// U+FFFD, losing the name).
func jsonName(s string) (shown, exact string) {
	if utf8.ValidString(s) {
		return s, ""
	}
	return strconv.Quote(s), base64.StdEncoding.EncodeToString([]byte(s))
}

type predictionLine struct {
	File       string      `json:"file"`
	FileBase64 string      `json:"file_base64,omitempty"`
	Top        []classLine `json:"top,omitempty"`
	Error      string      `json:"error,omitempty"`
}

type classLine struct {
	Class       string  `json:"class"`
	ClassBase64 string  `json:"class_base64,omitempty"`
	Prob        float64 `json:"prob"`
}

func predictionJSON(p trainer.Prediction) predictionLine {
	var l predictionLine
	l.File, l.FileBase64 = jsonName(p.File)
	if p.Err != nil {
		l.Error = fileError(p)
		return l
	}
	for _, c := range p.Classes {
		cl := classLine{Prob: c.Prob}
		cl.Class, cl.ClassBase64 = jsonName(c.Class)
		l.Top = append(l.Top, cl)
	}
	return l
}
