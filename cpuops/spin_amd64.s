#include "textflag.h"

// func spinPause()
TEXT ·spinPause(SB), NOSPLIT, $0-0
	PAUSE
	PAUSE
	PAUSE
	PAUSE
	RET
