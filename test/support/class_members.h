#pragma once
// Counts the non-static data members of every class, struct and union defined in a C++ source text, for the
// rule that no class under models/, kernels/ or tools/ holds more than 15 (issue 23: a class that grows past
// it groups related fields into named records). A tokenizer, not a compiler: it reads the code of this tree
// (comments, strings, raw strings, digit separators and preprocessor lines skipped) and counts declarators,
// so `int a, b;` is two members. Not counted: static members, member functions (declared or defined, operators
// and `= default` ones too), types declared inside (their own members count for them), enumerators, `using`,
// `typedef`, `friend`, `static_assert` and access specifiers. The members of an anonymous union or struct
// count for the class around it, as C++ makes them its members.
#include <string>
#include <string_view>
#include <vector>

namespace tpusim::testing {

struct ClassMembers {
  std::string name;  // nested classes as Outer::Inner; "<anonymous>" for a type without a name
  int line = 0;      // the line of the class's opening brace (1-based)
  int data_members = 0;
};

// Every class defined in `source` (local classes in function bodies too), in the order their bodies open.
[[nodiscard]] std::vector<ClassMembers> class_members(std::string_view source);

}  // namespace tpusim::testing
