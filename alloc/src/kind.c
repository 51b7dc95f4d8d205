/* What a size is (kind.h): the size classes' tables.  (The lookup of a
 * pointer's kind is inline in pointer_kind.h.) */
#include "kind.h"

/* ------------------------------------------------------------ size classes */

uint32_t _hh_class_size[HH_CLASSES];
uint8_t _hh_class_table[2][HH_DIRECT_SLOTS];
uint8_t _hh_class_direct_first[2][HH_CLASSES], _hh_class_direct_last[2][HH_CLASSES];

void _hh_classes_init(void) {
    for (unsigned c = 1; c <= 8; c++) _hh_class_size[c] = 16u * c;
    for (unsigned c = 9; c <= 56; c++) {
        unsigned j = c - 9, bit = 7 + j / 8, sub = j % 8;
        _hh_class_size[c] = (9u + sub) << (bit - 3);
    }
    /* A 64 KiB page in 7, 6, 5 and 4 blocks (multiples of 16). */
    for (unsigned blocks = 7; blocks >= 4; blocks--) {
        _hh_class_size[HH_SPLIT_CLASS(blocks)] = (uint32_t)HH_SPLIT_SIZE(blocks);
    }
    for (unsigned coarse = 0; coarse <= 1; coarse++) {
        for (unsigned c = 0; c < HH_CLASSES; c++) {
            _hh_class_direct_first[coarse][c] = 1;
            _hh_class_direct_last[coarse][c] = 0;
        }
        /* Every size in ((i - 1) * 16, i * 16] has the class of i * 16. */
        for (unsigned i = 0; i < HH_DIRECT_SLOTS; i++) {
            unsigned c = _hh_size_class_computed((size_t)i * 16, coarse);
            _hh_class_table[coarse][i] = (uint8_t)c;
            if (_hh_class_direct_first[coarse][c] > _hh_class_direct_last[coarse][c]) {
                _hh_class_direct_first[coarse][c] = (uint8_t)i;
            }
            _hh_class_direct_last[coarse][c] = (uint8_t)i;
        }
    }
    /* Classes grow in 16-byte multiples, and a page holds at least 4 blocks;
     * every size up to HH_DIRECT_MAX finds a class that holds it; a coarse
     * class is one of the classes, its own coarse class. */
    for (unsigned c = 2; c < HH_CLASSES; c++) {
        HH_ASSERT(_hh_class_size[c] % 16 == 0 && _hh_class_size[c] > _hh_class_size[c - 1]);
        HH_ASSERT(_hh_size_class_computed(_hh_class_size[c], 0) == c);
        HH_ASSERT(_hh_size_class_computed(_hh_class_size[c], 1) >= c);
        HH_ASSERT(_hh_size_class_computed(
                      _hh_class_size[_hh_size_class_computed(_hh_class_size[c], 1)], 1) ==
                  _hh_size_class_computed(_hh_class_size[c], 1));
    }
    HH_ASSERT(HH_SPAGE / _hh_class_size[HH_CLASSES - 1] >= 4);
    for (unsigned i = 0; i < HH_DIRECT_SLOTS; i++) {
        HH_ASSERT(_hh_class_size[_hh_class_table[0][i]] >= (size_t)i * 16);
        HH_ASSERT(_hh_class_size[_hh_class_table[1][i]] >= (size_t)i * 16);
    }
}
