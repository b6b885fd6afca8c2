// counters.c's interface: driver calls counted at the jump table.
void stoke_counters_install(void);
void stoke_counters_read(unsigned long long out[6]);
