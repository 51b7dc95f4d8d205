/* C++ delete that does not match its new: an array deleted as one object and
 * one object deleted as an array (of chars, and of std::string, whose array
 * new puts a count before the objects), and a sized delete that names a size
 * the block was not allocated with. Under libstdc++ every delete ends in
 * free, or in the allocator's own sized free where it defines the C++
 * operators (mimalloc, jemalloc, tcmalloc do).
 *
 *   hh-probe-delete-mismatch --list | NAME [SIZE] */
#include <string>

#include "probe.h"

namespace {

// Pointers read back through volatile: the compiler cannot pair a delete with
// its new, so it neither warns about the mismatch nor removes the pair.
template <typename T>
T *hidden(T *pointer) {
    T *volatile copy = pointer;
    return copy;
}

void chars_array_as_one(std::size_t size) {
    char *chars = hidden(new char[size]);
    delete chars;
    probe_not_caught();
}

void char_one_as_array(std::size_t) {
    char *one = hidden(new char);
    delete[] one;
    probe_not_caught();
}

void strings_array_as_one(std::size_t size) {
    std::size_t count = size / sizeof(std::string) > 0 ? size / sizeof(std::string) : 1;
    std::string *strings = hidden(new std::string[count]);
    delete strings;
    probe_not_caught();
}

void string_one_as_array(std::size_t) {
    std::string *one = hidden(new std::string);
    delete[] one;
    probe_not_caught();
}

void sized_delete_wrong_size(std::size_t size) {
    void *block = hidden(::operator new(size));
    ::operator delete(block, 4 * size + 64);
    probe_not_caught();
}

const probe probes[] = {
    {"char-array-as-one", "C++ delete mismatch", true, chars_array_as_one},
    {"char-one-as-array", "C++ delete mismatch", false, char_one_as_array},
    {"string-array-as-one", "C++ delete mismatch", true, strings_array_as_one},
    {"string-one-as-array", "C++ delete mismatch", false, string_one_as_array},
    {"sized-delete-wrong-size", "C++ delete mismatch", true, sized_delete_wrong_size},
};

}  // namespace

int main(int argc, char **argv) { return probe_main(argc, argv, probes, PROBE_COUNT(probes)); }
