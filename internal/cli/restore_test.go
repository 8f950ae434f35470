package cli

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
)

// restore's question answers as typed, and Ctrl-C (main's context
// cancelled) while it waits for an answer stops it with an error, so
// that nothing is applied and kubediff exits non-zero: the read of stdin
// blocked it before, and a later "y" applied.
func TestRestoreQuestion(t *testing.T) {
	for _, tc := range []struct {
		answer string
		want   bool
	}{{"y\n", true}, {"YES\n", true}, {"n\n", false}, {"\n", false}, {"", false}} {
		t.Run(strings.TrimSpace(tc.answer), func(t *testing.T) {
			var stderr strings.Builder
			got, err := confirm(context.Background(), strings.NewReader(tc.answer), &stderr, "Apply? [y/N] ")
			if got != tc.want || err != nil || stderr.String() != "Apply? [y/N] " {
				t.Errorf("answer %q: %v, %v, asked %q", tc.answer, got, err, stderr.String())
			}
		})
	}

	t.Run("Ctrl-C", func(t *testing.T) {
		in, typing := io.Pipe() // nothing typed yet
		defer typing.Close()
		ctx, interrupt := context.WithCancel(context.Background())
		var stderr strings.Builder
		result := make(chan error, 1)
		go func() {
			ok, err := confirm(ctx, in, &stderr, "Apply? [y/N] ")
			if ok {
				err = errors.New("answered yes")
			}
			result <- err
		}()
		interrupt()
		if err := <-result; err == nil || !strings.Contains(err.Error(), "interrupted at the question: nothing applied") || !errors.Is(err, context.Canceled) {
			t.Errorf("Ctrl-C at the question: %v", err)
		}
	})
}
