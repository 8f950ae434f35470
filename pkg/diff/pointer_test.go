package diff

import (
	"fmt"
	"reflect"
	"testing"
)

func sprintf(format string, a ...any) string { return fmt.Sprintf(format, a...) }

func TestPointerRoundTrip(t *testing.T) {
	for _, segs := range [][]string{
		{"data", "k"},
		{"metadata", "annotations", "kubectl.kubernetes.io/last-applied-configuration"},
		{"a~b", "~1", "/", "~0/"},
		{""},
	} {
		p := FormatPointer(segs)
		back, err := ParsePointer(p)
		if err != nil || !reflect.DeepEqual(back, segs) {
			t.Errorf("%q → %q → %q, %v", segs, p, back, err)
		}
	}
	if got := FormatPointer([]string{"a/b", "c~d"}); got != "/a~1b/c~0d" {
		t.Errorf("FormatPointer = %q", got)
	}
}

func FuzzPointerRoundTrip(f *testing.F) {
	for _, s := range []string{"k", "a/b", "~1", "~01", "", "ü/~"} {
		f.Add(s, "x")
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		segs := []string{a, b}
		back, err := ParsePointer(FormatPointer(segs))
		if err != nil || !reflect.DeepEqual(back, segs) {
			t.Fatalf("%q round-trips to %q, %v", segs, back, err)
		}
	})
}
