/* common/version.h - the one place the version number lives. */
#ifndef PACER_VERSION_H
#define PACER_VERSION_H
#define PACER_VERSION "0.1.0"
#endif
