#ifndef EXP_CHIREDIS_SHIM_H
#define EXP_CHIREDIS_SHIM_H
/* redisCommand is variadic: use redisCommandArgv from Swift. */
#include <hiredis/hiredis.h>
#endif
