package record

import "testing"

func TestHunkHeader(t *testing.T) {
	for _, tt := range []struct {
		name string
		h    Hunk
		want string
	}{
		{"lines on both sides", Hunk{FromLine: 16, FromCount: 7, ToLine: 16, ToCount: 8}, "@@ -16,7 +16,8 @@"},
		{"one line is its number alone", Hunk{FromLine: 3, FromCount: 1, ToLine: 3, ToCount: 2}, "@@ -3 +3,2 @@"},
		{"no old lines: numbered by the line before", Hunk{FromLine: 1, FromCount: 0, ToLine: 1, ToCount: 2}, "@@ -0,0 +1,2 @@"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.h.Header(); got != tt.want {
				t.Fatalf("Header() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestSizes(t *testing.T) {
	size := func(n int) *int { return &n }
	for _, tt := range []struct {
		name string
		fc   FieldChange
		want string
	}{
		{"not cut", FieldChange{Op: OpReplace, From: "a", To: "b"}, ""},
		{"replaced", FieldChange{Op: OpReplace, Truncated: true, FromBytes: size(1 << 20), ToBytes: size(5000)}, "1.0 MiB → 4.9 KiB"},
		{"added", FieldChange{Op: OpAdd, Truncated: true, ToBytes: size(3 << 20)}, "3.0 MiB"},
		{"an empty side", FieldChange{Op: OpReplace, Truncated: true, FromBytes: size(0), ToBytes: size(5000)}, "0 B → 4.9 KiB"},
		{"just under a unit", FieldChange{Op: OpRemove, Truncated: true, FromBytes: size(1048570)}, "1.0 MiB"},
		{"bytes", FieldChange{Op: OpRemove, Truncated: true, FromBytes: size(999)}, "999 B"},
		{"a thousand bytes", FieldChange{Op: OpRemove, Truncated: true, FromBytes: size(1000)}, "1.0 KiB"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.fc.Sizes(); got != tt.want {
				t.Fatalf("Sizes() = %q, want %q", got, tt.want)
			}
		})
	}
}
