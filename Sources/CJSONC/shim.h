#ifndef EXP_CJSONC_SHIM_H
#define EXP_CJSONC_SHIM_H
#include <json-c/json.h>
#include <json-c/json_tokener.h>
#include <json-c/json_object_iterator.h>
#endif
