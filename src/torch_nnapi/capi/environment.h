/* The Python a program that is not Python starts for libneuralnetworks.so (environment.c).
 * Hidden: the library exports the NNAPI functions only. */

#ifndef TORCH_NNAPI_ENVIRONMENT_H
#define TORCH_NNAPI_ENVIRONMENT_H

/* The Python executable to run as (the interpreter's program name). */
__attribute__((visibility("hidden"))) const char *tnn_python_program(void);

/* The libpython to load. */
__attribute__((visibility("hidden"))) const char *tnn_python_library(void);

#endif
