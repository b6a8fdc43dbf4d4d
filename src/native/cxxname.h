/* cxxname.h: the short form of a demangled C++ function name, as profiles
 * show native frames by default (`--full-names`: the demangler's whole
 * text).
 *
 * The short form keeps the qualified name and drops what makes one
 * function many lines of text: the return type of a template function,
 * template arguments, parameter lists with their qualifiers (const, &)
 * and ABI tags, so that
 *   torch::autograd::python::PythonEngine::execute(std::vector<torch::
 *   autograd::Edge, std::allocator<...> > const&, ...)
 * is "torch::autograd::python::PythonEngine::execute". Kept as they are:
 * "(anonymous namespace)", lambdas ("{lambda(int)#1}"), operator names
 * ("operator()", "operator<<", "operator new[]", "operator bool"), the
 * function of a local entity without its parameters
 * ("f::{lambda()#1}::operator()") and a clone suffix (" [clone .cold]").
 * A name that is not C++ (no '(' and no '<') is returned whole.
 *
 * Pure: no allocation, no state; out always NUL-terminated. */
#ifndef PST_NATIVE_CXXNAME_H
#define PST_NATIVE_CXXNAME_H

#include <stddef.h>

/* Writes the short form of name into out (size >= 1 bytes; a longer one is
 * cut); returns out. When nothing would be left, name itself (cut). */
const char *pst__cxx_short(const char *name, char *out, size_t size);

#endif
