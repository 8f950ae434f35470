package main

import (
	"fmt"
	"os"
)

// profileOnSignal is for benchmarks on Linux: Windows has no SIGUSR1.
func profileOnSignal(string) {
	fmt.Fprintln(os.Stderr, "kubediff: KUBEDIFF_CPUPROFILE needs SIGUSR1, which Windows lacks; ignored")
}

// heapProfileOnSignal is for benchmarks on Linux: Windows has no SIGUSR2.
func heapProfileOnSignal(string) {
	fmt.Fprintln(os.Stderr, "kubediff: KUBEDIFF_HEAPPROFILE needs SIGUSR2, which Windows lacks; ignored")
}
