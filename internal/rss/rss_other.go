//go:build !unix

package rss

// Now is 0, 0 where neither /proc nor getrusage exists (Windows): callers
// then record no memory figures.
func Now() (current, peak int64) { return 0, 0 }
