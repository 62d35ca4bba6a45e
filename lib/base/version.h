/* version.h: the agentbox version, recorded in images and profiles. */
#ifndef AB_VERSION_H
#define AB_VERSION_H

#define AB_VERSION "0.2.0"

#endif
