// symtab-cxx.cc: C++ names for the demangling test of pst__symtab (built by
// tests/unit/test-symtab.c with g++): a namespace, a class template and an
// overloaded function, kept out of line.
namespace ns {
template <typename T> struct Foo {
  __attribute__((noinline)) T bar(T x) { return x * 3 + 1; }
};

__attribute__((noinline)) int over(int x) { return x + 1; }
__attribute__((noinline)) double over(double x) { return x * 1.5; }
} // namespace ns

int main(int argc, char **argv) {
  ns::Foo<int> a;
  ns::Foo<long> b;
  (void)argv;
  return a.bar(argc) + (int)b.bar(argc) + ns::over(argc) +
         (int)ns::over((double)argc);
}
