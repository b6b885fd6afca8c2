package cpuops

// spinPause tells the core that this is a spin-wait loop (x86's PAUSE, a
// few times): it frees the pipeline for the other hardware thread and
// eases the memory ordering stall when the awaited store lands.
//
//go:noescape
func spinPause()
