package diff

import (
	"fmt"
	"reflect"
	"regexp"
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

// isPlainKey says what the regular expression it replaced says.
func TestIsPlainKeyMatchesItsPattern(t *testing.T) {
	pattern := regexp.MustCompile(`^[A-Za-z_$][A-Za-z0-9_$-]*$`)
	for _, key := range []string{"", "a", "Z9", "_x", "$ref", "9lives", "-x", "app.kubernetes.io/name", "a-b_c$", "é", "a b", "x\n", "kubectl.kubernetes.io~1last", "A-"} {
		if got, want := isPlainKey(key), pattern.MatchString(key); got != want {
			t.Errorf("isPlainKey(%q) = %v, want %v", key, got, want)
		}
	}
}

func TestPointerLessOrdersSegmentBySegment(t *testing.T) {
	ordered := []string{"/metadata/labels/app", "/spec/containers/2/image", "/spec/containers/10", "/spec/containers/10/image", "/spec/replicas", "/status"}
	for i := range ordered {
		for j := range ordered {
			if got, want := pointerLess(ordered[i], ordered[j]), i < j; got != want {
				t.Errorf("pointerLess(%q, %q) = %v, want %v", ordered[i], ordered[j], got, want)
			}
		}
	}
	if pointerLess("/a/", "/a") || pointerLess("/a", "/a/") {
		t.Error("an empty last segment sorts as no segment")
	}
}
