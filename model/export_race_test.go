package model

// RaceEnabled tells the external tests (package model_test) whether the
// race detector is on.
const RaceEnabled = raceEnabled
