// SPDX-License-Identifier: GPL-2.0
/*
 * loader_lock's plugin: its constructor, run by dlopen() with the
 * loader's lock held, takes the program's lock (a plugin registering
 * itself in the program's table does this).
 */
#include <pthread.h>

extern pthread_mutex_t loader_lock_app;
extern volatile int loader_lock_in_ctor;

__attribute__((constructor)) static void plugin_init(void)
{
	loader_lock_in_ctor = 1;
	pthread_mutex_lock(&loader_lock_app);
	pthread_mutex_unlock(&loader_lock_app);
}
