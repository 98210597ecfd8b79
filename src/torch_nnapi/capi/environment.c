/* Where the Python environment holding libneuralnetworks.so is, for a program that is not
 * Python: the library locates itself with dladdr, then walks up from its site-packages to a
 * venv's pyvenv.cfg (its bin/pythonX.Y, and the libpython of the Python it was made from,
 * read from "home") or to a prefix's bin/pythonX.Y (and its lib/libpythonX.Y.so).
 *
 * The build (setup.py) defines TNN_PYTHON_VERSION (the X.Y whose ABI the library is built
 * for), TNN_LIBPYTHON_NAME, TNN_MULTIARCH and the fallbacks TNN_LIBPYTHON and
 * TNN_PYTHON_EXECUTABLE (the Python that built the library). */

#define _GNU_SOURCE /* dladdr */

#include <dlfcn.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "environment.h"

/* The Python environment holding this library, found from where the library is. */
static struct {
    char python[PATH_MAX];    /* its bin/pythonX.Y ("" when not found) */
    char libpython[PATH_MAX]; /* the libpython to load ("" when not found) */
} environment;

static int is_file(const char *path)
{
    return access(path, F_OK) == 0;
}

/* snprintf into a PATH_MAX buffer; 0 (and an empty path) when the path would not fit. */
static int format_path(char *out, const char *format, ...)
{
    va_list arguments;
    va_start(arguments, format);
    int length = vsnprintf(out, PATH_MAX, format, arguments);
    va_end(arguments);
    if (length < 0 || length >= PATH_MAX) {
        out[0] = '\0';
        return 0;
    }
    return 1;
}

/* Cuts the last component off a path in place; 0 when there is none left to cut. */
static int parent(char *path)
{
    char *slash = strrchr(path, '/');
    if (!slash || slash == path)
        return 0;
    *slash = '\0';
    return 1;
}

/* <dir>/bin/pythonX.Y, or python3 or python there, into environment.python. */
static int python_in(const char *dir)
{
    const char *names[] = {"python" TNN_PYTHON_VERSION, "python3", "python"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        if (format_path(environment.python, "%s/bin/%s", dir, names[i])
            && access(environment.python, X_OK) == 0)
            return 1;
    }
    environment.python[0] = '\0';
    return 0;
}

/* libpython in a prefix: <prefix>/lib/NAME or <prefix>/lib/<multiarch>/NAME. */
static int libpython_in(const char *prefix)
{
    const char *forms[] = {"%s/lib/%s", "%s/lib/" TNN_MULTIARCH "/%s"};
    for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++) {
        if (format_path(environment.libpython, forms[i], prefix, TNN_LIBPYTHON_NAME)
            && is_file(environment.libpython))
            return 1;
    }
    environment.libpython[0] = '\0';
    return 0;
}

/* A venv (<dir>/pyvenv.cfg): its python, and the libpython of the Python it was made from
 * ("home = <base>/bin"). */
static int venv_at(const char *dir)
{
    char config[PATH_MAX], line[PATH_MAX + 16];
    if (!format_path(config, "%s/pyvenv.cfg", dir))
        return 0;
    FILE *file = fopen(config, "r");
    if (!file)
        return 0;
    python_in(dir);
    while (fgets(line, sizeof line, file)) {
        char *value = strchr(line, '=');
        if (strncmp(line, "home", 4) != 0 || !value)
            continue;
        value += 1 + strspn(value + 1, " \t");
        value[strcspn(value, "\r\n")] = '\0';
        char base[PATH_MAX];
        if (format_path(base, "%s", value) && parent(base)) /* <base>/bin -> <base> */
            libpython_in(base);
    }
    fclose(file);
    return 1;
}

/* Walks up from the package's directory to the environment holding it. */
static void locate_environment(void)
{
    Dl_info info;
    char path[PATH_MAX];
    if (!dladdr((void *)&tnn_python_library, &info) || !info.dli_fname
        || !realpath(info.dli_fname, path))
        return;
    while (parent(path)) {
        if (venv_at(path))
            return;
        char python[PATH_MAX];
        if (format_path(python, "%s/bin/python" TNN_PYTHON_VERSION, path)
            && access(python, X_OK) == 0) { /* a prefix: /usr, /usr/local, a conda env... */
            python_in(path);
            libpython_in(path);
            return;
        }
    }
}

/* The first of: the variable, what was found, the built-in path if it exists, the bare
 * built-in name (for the dynamic loader to search). */
static const char *choose(const char *variable, const char *found, const char *built_in,
                          const char *name)
{
    const char *value = getenv(variable);
    if (value && *value)
        return value;
    if (found[0])
        return found;
    return is_file(built_in) || !name ? built_in : name;
}

/* The environment, found once (the first call happens under neuralnetworks.c's
 * pthread_once, before any other). */
static void locate_once(void)
{
    static int located;
    if (!located) {
        located = 1;
        locate_environment();
    }
}

const char *tnn_python_program(void)
{
    locate_once();
    return choose("TORCH_NNAPI_PYTHON", environment.python, TNN_PYTHON_EXECUTABLE, NULL);
}

const char *tnn_python_library(void)
{
    locate_once();
    return choose("TORCH_NNAPI_LIBPYTHON", environment.libpython, TNN_LIBPYTHON,
                  TNN_LIBPYTHON_NAME);
}
