/*
 * MB_MAYBE_UNUSED marks a static function of a header that some of the files including it do
 * not call (dense.h, work.h, geometry.h), so that -Wall's -Wunused-function stays quiet for
 * them; it changes no code.
 */
#ifndef FMU_MB_UNUSED_H
#define FMU_MB_UNUSED_H

#if defined(__GNUC__) || defined(__clang__)
#define MB_MAYBE_UNUSED __attribute__((unused))
#else
#define MB_MAYBE_UNUSED
#endif

#endif
