//go:build !unix

package trainer

// memoryNow is 0, 0 where neither /proc nor getrusage exists (Windows):
// metrics.jsonl then records no memory figures.
func memoryNow() (rss, peak int64) { return 0, 0 }
